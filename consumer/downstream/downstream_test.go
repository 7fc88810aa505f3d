package downstream

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/classify"
	"github.com/eventpipe/eventpipe/consumer/engine"
	"github.com/eventpipe/eventpipe/consumer/logfields"
)

// TestVerdictOfEveryStatus: the answer table over every status a
// handler can send: 2xx done; 408, 425, 429 and 5xx retried; every other
// status (1xx, 3xx, the other 4xx) refused for good. Judge agrees, and
// classifies a refusal as poison and a retry as transient with the status
// as its code.
func TestVerdictOfEveryStatus(t *testing.T) {
	for status := 100; status <= 599; status++ {
		want := Refused
		switch {
		case status/100 == 2:
			want = Done
		case status/100 == 5, status == 408, status == 425, status == 429:
			want = Retry
		}
		if got := VerdictOf(status); got != want {
			t.Errorf("VerdictOf(%d) = %s, want %s", status, got, want)
		}
		v, err := Judge("POST", "http://h/x", status, nil)
		c := classify.Of(err)
		switch {
		case v != want:
			t.Errorf("Judge(%d) = %s, want %s", status, v, want)
		case want == Done && err != nil:
			t.Errorf("Judge(%d): %v, want no error", status, err)
		case want == Retry && (c.Type != logfields.ErrorTypeTransient || c.Code != fmt.Sprint(status)):
			t.Errorf("Judge(%d): class %+v, want transient with code %d", status, c, status)
		case want == Refused && c.Type != logfields.ErrorTypePoison:
			t.Errorf("Judge(%d): class %+v, want poison", status, c)
		}
	}
}

// counting is a handler that counts its calls and answers as told.
type counting struct {
	calls    atomic.Int64
	answer   func(w http.ResponseWriter, r *http.Request, n int64)
	lastKey  atomic.Value
	lastTry  atomic.Value
	lastType atomic.Value
}

func (h *counting) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := h.calls.Add(1)
	h.lastKey.Store(r.Header.Get(IdempotencyKeyHeader))
	h.lastTry.Store(r.Header.Get(AttemptHeader))
	h.lastType.Store(r.Header.Get("Content-Type"))
	_, _ = io.Copy(io.Discard, r.Body)
	h.answer(w, r, n)
}

func call(url string) Call {
	return Call{URL: url, Key: "leases/k1", Attempt: 3, Body: []byte(`{"a":1}`), MaxBody: 64, Timeout: time.Second, Bound: 2 * time.Second}
}

func TestDoAnswers(t *testing.T) {
	for _, tc := range []struct {
		status int
		want   Verdict
	}{{200, Done}, {204, Done}, {500, Retry}, {425, Retry}, {429, Retry}, {422, Refused}, {302, Refused}} {
		h := &counting{answer: func(w http.ResponseWriter, _ *http.Request, _ int64) {
			w.Header().Set("Location", "/x")
			w.WriteHeader(tc.status)
			_, _ = io.WriteString(w, strings.Repeat("b", 100))
		}}
		srv := httptest.NewServer(h)
		a, err := New(nil, nil).Do(t.Context(), call(srv.URL))
		srv.Close()
		wantHead := 65
		if tc.status == 204 {
			wantHead = 0
		}
		if err != nil || a.Verdict != tc.want || a.Status != tc.status || len(a.Head) != wantHead || a.Header.Get("Location") != "/x" {
			t.Errorf("HTTP %d: %+v, %v; want %s with %d bytes of head", tc.status, a, err, tc.want, wantHead)
		}
		if h.lastKey.Load() != "leases/k1" || h.lastTry.Load() != "3" || h.lastType.Load() != "application/json" {
			t.Errorf("headers: key %v, attempt %v, type %v", h.lastKey.Load(), h.lastTry.Load(), h.lastType.Load())
		}
	}
}

func TestDoConnectionRefusedIsRetry(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	a, err := New(nil, nil).Do(t.Context(), call("http://"+addr))
	if c := classify.Of(a.Err); err != nil || a.Verdict != Retry || c.Type != logfields.ErrorTypeTransient || c.Code != "UNAVAILABLE" {
		t.Fatalf("refused connection: %+v, %v (class %+v); want retry, transient UNAVAILABLE", a, err, c)
	}
}

// TestDroppedConnectionIsOneCall: a handler that does its work and then
// drops the connection, on a connection the transport reused, is called
// once: the call is in doubt, never resent by the transport (issue 34:
// Go's transport resends a keyed POST whose reused connection fails
// after the request was written).
func TestDroppedConnectionIsOneCall(t *testing.T) {
	var calls atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				br := bufio.NewReader(conn)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					_, _ = io.Copy(io.Discard, req.Body)
					if calls.Add(1) == 1 {
						// The first request is answered, keeping the connection.
						_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
						continue
					}
					return // the work is done; the connection is dropped
				}
			}()
		}
	}()
	c := New(&http.Client{Transport: &http.Transport{}}, nil)
	url := "http://" + ln.Addr().String()
	if a, err := c.Do(t.Context(), call(url)); err != nil || a.Verdict != Done {
		t.Fatalf("first call: %+v, %v", a, err)
	}
	a, err := c.Do(t.Context(), call(url))
	if err != nil || a.Verdict != Unknown {
		t.Fatalf("a dropped connection after the request: %+v, %v; want unknown (in doubt)", a, err)
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("the handler saw %d requests for two calls, want 2 (the transport must not resend)", n)
	}
}

// TestLateAnswerSettles: a handler slower than the timeout gets no second
// call from the door (Do returns ErrLate) and its answer, when it comes,
// goes to Late; the reservation is extended meanwhile; Wait waits for it.
func TestLateAnswerSettles(t *testing.T) {
	release := make(chan struct{})
	h := &counting{answer: func(w http.ResponseWriter, _ *http.Request, _ int64) {
		<-release
		w.WriteHeader(201)
	}}
	srv := httptest.NewServer(h)
	defer srv.Close()
	c := New(nil, nil)
	var extends atomic.Int64
	late := make(chan Answer, 1)
	cl := call(srv.URL)
	cl.Timeout, cl.Bound, cl.Heartbeat = 50*time.Millisecond, 10*time.Second, 10*time.Millisecond
	cl.Extend = func(context.Context) error { extends.Add(1); return nil }
	cl.Late = func(a Answer) { late <- a }
	if _, err := c.Do(t.Context(), cl); !errors.Is(err, ErrLate) {
		t.Fatalf("Do of a slow handler: %v, want ErrLate", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	if c.Wait(ctx) {
		t.Fatal("Wait returned while the call runs")
	}
	cancel()
	for extends.Load() < 2 {
		time.Sleep(5 * time.Millisecond)
	}
	close(release)
	if a := <-late; a.Verdict != Done || a.Status != 201 {
		t.Fatalf("late answer: %+v, want done 201", a)
	}
	if !c.Wait(t.Context()) {
		t.Fatal("Wait after the call ended")
	}
	if n := h.calls.Load(); n != 1 {
		t.Fatalf("%d calls, want 1", n)
	}
}

// TestCallEnds: a call past its bound is cut in doubt; one cut by the
// caller's own cut (shutdown) or fenced by its reservation's takeover is
// abandoned.
func TestCallEnds(t *testing.T) {
	hang := &counting{answer: func(_ http.ResponseWriter, r *http.Request, _ int64) { <-r.Context().Done() }}
	srv := httptest.NewServer(hang)
	defer srv.Close()
	for _, tc := range []struct {
		name string
		mod  func(c *Call, cut context.CancelFunc)
		want Verdict
	}{
		{"bound", func(c *Call, _ context.CancelFunc) { c.Bound = 50 * time.Millisecond }, Unknown},
		{"shutdown", func(_ *Call, cut context.CancelFunc) { time.AfterFunc(50*time.Millisecond, cut) }, Abandoned},
		{"fenced", func(c *Call, _ context.CancelFunc) {
			c.Heartbeat = 20 * time.Millisecond
			c.Extend = func(context.Context) error {
				return &engine.Error{Type: engine.TypeStale, Code: "FENCED", Err: errors.New("taken over")}
			}
		}, Abandoned},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cut, stop := context.WithCancel(context.Background())
			defer stop()
			cl := call(srv.URL)
			cl.Timeout, cl.Bound = 10*time.Second, 10*time.Second
			tc.mod(&cl, stop)
			a, err := New(nil, cut).Do(t.Context(), cl)
			if err != nil || a.Verdict != tc.want {
				t.Fatalf("%+v, %v; want %s", a, err, tc.want)
			}
		})
	}
}
