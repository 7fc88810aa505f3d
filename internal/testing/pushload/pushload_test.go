package pushload_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/eventpipe/eventpipe/consumer/envelope"
	"github.com/eventpipe/eventpipe/internal/testing/pgtest"
	"github.com/eventpipe/eventpipe/internal/testing/pushload"
)

// TestMessagesArePushesOfTheDefaultRoute: every generated body is a push
// envelope the consumer decodes, of a system event of the document the
// bare loop writes for it.
func TestMessagesArePushesOfTheDefaultRoute(t *testing.T) {
	msgs := pushload.Messages("t", 50, 7)
	for i, m := range msgs {
		msg, err := envelope.DecodePush(m.Body)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		var payload struct{ Service string }
		if err := json.Unmarshal(msg.Data, &payload); err != nil {
			t.Fatal(err)
		}
		if want := "bench__" + payload.Service; m.DocID != want {
			t.Errorf("message %d updates %s, its payload %s", i, m.DocID, want)
		}
	}
}

// TestBareLoopAppliesOnceInOrder: the bare loop is a correct apply, or its
// speed would be no yardstick: whatever the order of delivery and however
// many copies arrive, concurrently, each document ends with its newest
// message and each message's marker is written once.
func TestBareLoopAppliesOnceInOrder(t *testing.T) {
	ctx := context.Background()
	pg := pgtest.Start(t, pgtest.NoSync("checks what the bare loop writes, no timing"))
	b, err := pushload.OpenBare(ctx, pg.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const n, docs = 300, 20
	msgs := pushload.Messages("order", n, docs)
	var deliveries []pushload.Message
	for _, m := range msgs {
		for range 1 + rand.IntN(3) {
			deliveries = append(deliveries, m)
		}
	}
	rand.Shuffle(len(deliveries), func(i, j int) { deliveries[i], deliveries[j] = deliveries[j], deliveries[i] })
	if r := pushload.Drive(ctx, 8, deliveries, b.Send); r.Errors > 0 {
		t.Fatalf("%d deliveries failed", r.Errors)
	}
	conn, err := pgx.Connect(ctx, pg.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var markers int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM eventpipe_documents WHERE collection = 'eventpipe_dedupe'").Scan(&markers); err != nil {
		t.Fatal(err)
	}
	if markers != n {
		t.Errorf("%d markers for %d messages", markers, n)
	}
	for i := n - docs; i < n; i++ { // the newest message of each document
		m := msgs[i]
		var data []byte
		if err := conn.QueryRow(ctx, "SELECT data::text FROM eventpipe_documents WHERE collection = 'ops_services' AND id = $1", m.DocID).Scan(&data); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(compact(t, data), compact(t, m.Doc)) {
			t.Errorf("%s holds %s, want its newest message's %s", m.DocID, data, m.Doc)
		}
	}
}

func compact(t *testing.T, b []byte) []byte {
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestSummaryRatiosAreRoundByRound: each ratio is the median of ratios
// taken within a round, where the contenders ran under the same load, not
// a ratio of medians.
func TestSummaryRatiosAreRoundByRound(t *testing.T) {
	run := func(name string, secs float64, p99 time.Duration) pushload.Run {
		lat := make([]time.Duration, 100)
		for i := range lat {
			lat[i] = p99
		}
		return pushload.Run{Contender: name, Concurrency: 8, Messages: 1000, Elapsed: time.Duration(secs * float64(time.Second)), Latencies: lat}
	}
	// Round 1 at a high load (everything 4x slower), round 2 and 3 quiet:
	// this reaches 0.8 of the bare loop in every round.
	runs := []pushload.Run{
		run("bare", 4, 40*time.Millisecond), run("base", 8, 80*time.Millisecond), run("this", 5, 60*time.Millisecond),
		run("bare", 1, 10*time.Millisecond), run("base", 2, 20*time.Millisecond), run("this", 1.25, 15*time.Millisecond),
		run("bare", 1, 10*time.Millisecond), run("base", 2, 20*time.Millisecond), run("this", 1.25, 15*time.Millisecond),
	}
	var out strings.Builder
	pushload.Summarize(&out, runs, []string{"base", "this"})
	for _, want := range []string{"this / bare: throughput 0.80 [0.80 0.80 0.80]", "base / bare: throughput 0.50 [0.50 0.50 0.50]",
		"this / base: throughput 1.60 [1.60 1.60 1.60]", "p99 1.50 [1.50 1.50 1.50] (goal <= 2)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
}
