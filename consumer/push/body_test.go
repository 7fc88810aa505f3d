package push

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/budget"
	"github.com/eventpipe/eventpipe/consumer/limits"
	ct "github.com/eventpipe/eventpipe/internal/testing/consumertest"
)

// readSignal wraps a handler: reached is closed once the handler has read
// at least want bytes of a request's body (at its first read when want is
// 0), so a test knows what the server has taken in without sleeping.
type readSignal struct {
	h       http.Handler
	want    int64
	once    sync.Once
	reached chan struct{}
}

func newReadSignal(h http.Handler, want int64) *readSignal {
	return &readSignal{h: h, want: want, reached: make(chan struct{})}
}

func (s *readSignal) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r.Body = &countingBody{ReadCloser: r.Body, s: s}
	s.h.ServeHTTP(w, r)
}

type countingBody struct {
	io.ReadCloser
	s    *readSignal
	read int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	if b.read >= b.s.want {
		b.s.once.Do(func() { close(b.s.reached) })
	}
	n, err := b.ReadCloser.Read(p)
	b.read += int64(n)
	if b.read >= b.s.want {
		b.s.once.Do(func() { close(b.s.reached) })
	}
	return n, err
}

// stalledRequest is a push request that declares declared body bytes and
// holds only sent of them.
func stalledRequest(addr string, declared, sent int) []byte {
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", Path, addr, declared)
	return []byte(head + strings.Repeat("x", sent))
}

// stalledUpload opens a real TCP connection to addr, sends req (a
// stalledRequest) and leaves the connection open. It returns the
// connection.
func stalledUpload(t *testing.T, addr string, req []byte) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if _, err := conn.Write(req); err != nil {
		t.Fatal(err)
	}
	return conn
}

// allocated is the bytes this process has allocated so far.
func allocated() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

// TestStalledUploadHoldsWhatItSent holds the invariant that reading a push
// body allocates in proportion to what the client has sent, never to what
// it declared: over declared lengths up to the largest push body and sent
// lengths from nothing to a megabyte, a client that stops mid-body has
// made the server allocate at most 6x what it sent plus 256 KiB (its
// buffer doubles as it fills, and may have doubled once more when the
// client stopped). (The
// handler used to allocate the whole declared length before reading: 40
// uploads that declared 14 MB, sent 7 MB and stalled held 320 MB.)
func TestStalledUploadHoldsWhatItSent(t *testing.T) {
	maxBody := int(limits.MaxPushBodyBytes(limits.MaxMessageBytes))
	for _, declared := range []int{1 << 20, maxBody / 2, maxBody} {
		for _, sent := range []int{0, 1, 64 << 10, 1 << 20} {
			if sent >= declared {
				continue
			}
			t.Run(fmt.Sprintf("declared=%d/sent=%d", declared, sent), func(t *testing.T) {
				proc, _, _ := ct.NewProcessor(t, ct.Options{})
				sig := newReadSignal(New(proc, nil, nil), int64(sent))
				srv := httptest.NewServer(sig)
				t.Cleanup(srv.Close) // after the stalled client's connection closes
				req := stalledRequest(srv.Listener.Addr().String(), declared, sent)
				runtime.GC()
				before := allocated()
				stalledUpload(t, srv.Listener.Addr().String(), req)
				select {
				case <-sig.reached:
				case <-time.After(10 * time.Second):
					t.Fatal("the handler did not read what was sent within 10s")
				}
				if got, bound := allocated()-before, uint64(6*sent+256<<10); got > bound {
					t.Fatalf("a stalled upload that declared %d bytes and sent %d made the server allocate %d bytes, want at most %d",
						declared, sent, got, bound)
				}
			})
		}
	}
}

// TestPushBeyondMemoryBudgetRefusedUnread: with a memory budget that holds
// one maximum-size delivery, an upload that declared the largest body and
// stalled holds the budget; another push is answered 503 at once (Pub/Sub
// delivers it again) without its body being read; once the stalled client
// goes away, the same push is applied.
func TestPushBeyondMemoryBudgetRefusedUnread(t *testing.T) {
	maxBody := limits.MaxPushBodyBytes(limits.MaxMessageBytes)
	proc, _, log := ct.NewProcessor(t, ct.Options{})
	sig := newReadSignal(New(proc, nil, budget.New(limits.PushDoor().Bytes(maxBody))), 1)
	srv := httptest.NewServer(sig)
	t.Cleanup(srv.Close)
	stalled := stalledUpload(t, srv.Listener.Addr().String(), stalledRequest(srv.Listener.Addr().String(), int(maxBody), 1))
	<-sig.reached
	body := ct.PushBody(t, ct.Envelope{ID: "m1", Payload: sysEvent("healthy", "2026-01-02T03:00:00Z")})
	retryAfter := ""
	push := func() int {
		resp, err := http.Post(srv.URL+Path, "application/json", strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		retryAfter = resp.Header.Get("Retry-After")
		return resp.StatusCode
	}
	if code := push(); code != http.StatusServiceUnavailable || retryAfter != "1" {
		t.Fatalf("push beside a stalled upload holding the budget: %d, Retry-After %q; want 503, 1", code, retryAfter)
	}
	refused := ct.With(log.Lines(t), "message", "push request refused")
	if len(refused) != 1 || refused[0]["error_type"] != "transient" || refused[0]["severity"] != "WARNING" {
		t.Fatalf("refusal logged as %v, want one transient WARNING", refused)
	}
	// The stalled client goes away: its delivery fails reading and gives
	// the budget back (the response to it, 500, is the signal).
	_ = stalled.Close()
	for code := push(); code != http.StatusOK; code = push() {
		if code != http.StatusServiceUnavailable {
			t.Fatalf("push after the stalled upload ended: %d", code)
		}
		runtime.Gosched()
	}
}
