package gcpstandin

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
)

// TestClockSleepsEndAtTheirDeadlines: for any sequence of sleeps and advances, the clock
// never goes back, ends each sleep no earlier than its deadline, and moves no further
// than the latest deadline or advance asks (give or take the real time the test takes).
func TestClockSleepsEndAtTheirDeadlines(t *testing.T) {
	r := rand.New(rand.NewPCG(36, 4))
	for range 20 {
		dir := t.TempDir()
		realStart := time.Now()
		start, err := Now(dir)
		if err != nil {
			t.Fatal(err)
		}
		last, advanced := start, time.Duration(0)
		var latest time.Time // the furthest the clock may have been asked to go
		for range r.IntN(20) + 1 {
			now, err := Now(dir)
			if err != nil {
				t.Fatal(err)
			}
			if now.Before(last) {
				t.Fatalf("the clock went back from %s to %s", last, now)
			}
			last = now
			switch d := time.Duration(r.IntN(600)) * time.Second; r.IntN(3) {
			case 0:
				if err := Advance(dir, d); err != nil {
					t.Fatal(err)
				}
				advanced += d
				latest = latest.Add(d)
			default:
				// A sleep begun up to a minute before now (side by side with another).
				deadline := now.Add(-time.Duration(r.IntN(60)) * time.Second).Add(d)
				if err := sleepUntil(dir, deadline); err != nil {
					t.Fatal(err)
				}
				after, err := Now(dir)
				if err != nil {
					t.Fatal(err)
				}
				if after.Before(deadline) {
					t.Fatalf("a sleep until %s ended at %s", deadline, after)
				}
				if deadline.After(latest) {
					latest = deadline
				}
			}
		}
		end, err := Now(dir)
		if err != nil {
			t.Fatal(err)
		}
		bound := latest
		if bound.Before(start.Add(advanced)) {
			bound = start.Add(advanced)
		}
		if slack := time.Since(realStart); end.After(bound.Add(slack)) {
			t.Fatalf("the clock is at %s, past everything asked of it (%s, and %s of real time)", end, bound, slack)
		}
	}
}

// TestTimeSleepMovesTheClock: the time stand-in's time_sleep ends on the clock its
// createDuration after it began, at once in real time, and the gcp stand-in's next
// create is stamped after it.
func TestTimeSleepMovesTheClock(t *testing.T) {
	dir := t.TempDir()
	prov := TimeProvider(dir)
	before, err := Now(dir)
	if err != nil {
		t.Fatal(err)
	}
	realStart := time.Now()
	props := property.NewMap(map[string]property.Value{"createDuration": property.New("2m")})
	if _, err := prov.Create(context.Background(), p.CreateRequest{Urn: resource.URN("urn:pulumi:dev::eventpipe::" + SleepType + "::wait"), Properties: props}); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(realStart); took > 10*time.Second {
		t.Errorf("a 2m time_sleep took %s of real time", took)
	}
	after, err := Now(dir)
	if err != nil {
		t.Fatal(err)
	}
	if moved := after.Sub(before); moved < 2*time.Minute || moved > 2*time.Minute+time.Since(realStart) {
		t.Errorf("a 2m time_sleep moved the clock %s", moved)
	}
}
