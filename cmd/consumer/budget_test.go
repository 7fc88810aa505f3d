package main

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/eventpipe/eventpipe/consumer/handler"
	"github.com/eventpipe/eventpipe/consumer/limits"
	ct "github.com/eventpipe/eventpipe/internal/testing/consumertest"
)

// budgetContainerBytes is the container TestConcurrentBodiesStayWithinTheContainer runs
// the consumer in: small, so that the requests it sends at once need far more memory than
// it has (the keyed requests alone would hold 600 MB unbounded).
const budgetContainerBytes = 256 << 20

// TestConcurrentBodiesStayWithinTheContainer runs the consumer binary with the GOMEMLIMIT
// of a 256 MiB container and sends it at once, from a seeded generator, four dozen large
// requests at its three doors: 40 keyed requests of 8 to 10 MiB (the gateway's largest)
// through to a handler, then a mix of those, 10 MB pushes and 1 MiB callbacks. Every request over the memory
// budget is answered 503 with Retry-After 1 and retried, as Pub/Sub and clients do, once
// another is answered. It holds: the process's peak resident memory stays under 85% of
// the container (before the budget covered keyed requests, 40 of them took 722 MB in a
// 512 MiB one), every push is applied, and every keyed request and callback calls the
// handler exactly once.
func TestConcurrentBodiesStayWithinTheContainer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the consumer binary under 450 MB of concurrent bodies (consumer/budget holds the bound in-process): make test runs it")
	}
	var mu sync.Mutex
	calls := map[string]int{}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		calls[r.URL.Path+" "+r.Header.Get("Idempotency-Key")]++
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"created":true}`)
	}))
	t.Cleanup(hs.Close)
	p := startWith(t, "GOMEMLIMIT="+strconv.FormatInt(limits.MemoryLimit(budgetContainerBytes), 10),
		"EVENTPIPE_HANDLER_URL="+hs.URL, "EVENTPIPE_ROUTES="+ct.HandlerRoutes)
	idle := procStatus(t, p.Cmd.Process.Pid, "VmRSS")

	// A request's body is head and then tail (a keyed request's is cut from one
	// buffer, so two dozen of them do not take the test's memory too).
	type request struct {
		path, key  string
		head, tail []byte
		want       int
	}
	rng := rand.New(rand.NewPCG(34, 256))
	keyed := []byte(`{"order":"o","detail":"` + strings.Repeat("k", limits.MaxKeyedBodyBytes-40) + `"}`)
	callback := `{"callback_id":"%s","status":"done","detail":"` + strings.Repeat("c", limits.MaxCallbackBodyBytes-100) + `"}`
	var reqs []request
	for i := range 48 {
		key := fmt.Sprintf("key-%02d", i)
		switch k := rng.IntN(6); {
		case i < 40 || k < 4: // the 40 of the issue, then a mix
			n := len(keyed) - 2 - rng.IntN(2<<20) // 8 to 10 MiB, the string closed again below
			reqs = append(reqs, request{path: "/orders", key: key, head: keyed[:n], tail: []byte(`"}`), want: http.StatusCreated})
		case k < 5:
			reqs = append(reqs, request{path: "/pubsub/push", head: pushOf(t, i, `{"service":"svc-`+strconv.Itoa(i)+`","status":"ok","detail":"`+strings.Repeat("p", limits.MaxMessageBytes-80)+`"}`), want: http.StatusOK})
		default:
			reqs = append(reqs, request{path: "/callbacks/jobs", key: key, head: []byte(fmt.Sprintf(callback, key)), want: http.StatusCreated})
		}
	}
	ct.RetryRefused(len(reqs), func(i int) bool {
		r := reqs[i]
		req, _ := http.NewRequest(http.MethodPost, p.URL+r.path, io.MultiReader(bytes.NewReader(r.head), bytes.NewReader(r.tail)))
		req.ContentLength = int64(len(r.head) + len(r.tail))
		req.Header.Set("Content-Type", "application/json")
		if r.key != "" {
			req.Header.Set("Idempotency-Key", r.key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Errorf("%s %s: %v", r.path, r.key, err)
			return false
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			if resp.StatusCode != r.want {
				t.Errorf("%s %s: %d, want %d", r.path, r.key, resp.StatusCode, r.want)
			}
			return false
		}
		if ra := resp.Header.Get("Retry-After"); ra != "1" {
			t.Errorf("%s %s: 503 with Retry-After %q, want 1", r.path, r.key, ra)
		}
		return true
	})
	peak := procStatus(t, p.Cmd.Process.Pid, "VmHWM")
	t.Logf("peak resident memory %d MiB = %.1f%% of the container (idle %d MiB)", peak>>20, 100*float64(peak)/budgetContainerBytes, idle>>20)
	if share := 100 * float64(peak) / budgetContainerBytes; share >= memoryHeadroomPercent {
		t.Errorf("peak resident memory %d MiB = %.1f%% of the %d MiB container (idle %d MiB), want under %d%%",
			peak>>20, share, budgetContainerBytes>>20, idle>>20, memoryHeadroomPercent)
	}
	for _, r := range reqs {
		if r.key == "" {
			continue
		}
		path := map[string]string{"/orders": "/orders", "/callbacks/jobs": handler.CallbackPath("jobs")}[r.path]
		if n := calls[path+" "+r.key]; n != 1 {
			t.Errorf("%s %s: %d handler calls, want 1", r.path, r.key, n)
		}
	}
}
