package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/server"
	"github.com/eventpipe/eventpipe/internal/testing/pgtest"
	"github.com/eventpipe/eventpipe/internal/testing/proctest"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// startWith runs the consumer binary on a bbolt store with env added.
func startWith(t *testing.T, env ...string) *proctest.Proc {
	t.Helper()
	return proctest.Start(t, consumerBinary(t), proctest.Options{
		Base: []string{"PATH=" + os.Getenv("PATH")},
		Env:  append([]string{"EVENTPIPE_STORE=bbolt://" + filepath.Join(t.TempDir(), "consumer.db")}, env...),
	})
}

// closedWithin waits until the server closes conn (a read ends in EOF or
// an error after whatever the server wrote) and reports how long it took,
// or an error when it is still open after limit.
func closedWithin(conn net.Conn, limit time.Duration) (time.Duration, error) {
	start := time.Now()
	_ = conn.SetReadDeadline(start.Add(limit))
	_, err := io.Copy(io.Discard, conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return 0, fmt.Errorf("connection still open after %v", limit)
	}
	return time.Since(start), nil
}

// TestStalledUploadIsCut runs the binary and a real TCP client that sends
// the header and part of a large push body, then stops: the server closes
// the connection once the read timeout derived from
// EVENTPIPE_REQUEST_TIMEOUT has passed, instead of holding it (and its
// buffer) for as long as the client likes.
func TestStalledUploadIsCut(t *testing.T) {
	const requestTimeout = 4 * time.Second
	p := startWith(t, "EVENTPIPE_REQUEST_TIMEOUT="+requestTimeout.String())
	conn, err := net.Dial("tcp", strings.TrimPrefix(p.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	head := fmt.Sprintf("POST /pubsub/push HTTP/1.1\r\nHost: consumer\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", 14_000_000)
	if _, err := conn.Write([]byte(head + strings.Repeat("x", 1<<20))); err != nil {
		t.Fatal(err)
	}
	read := server.Config{RequestTimeout: requestTimeout}.Timeouts().Read
	took, err := closedWithin(conn, read+requestTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if took > read+requestTimeout/2 {
		t.Fatalf("stalled upload closed after %v, want about the read timeout %v", took, read)
	}
}

// TestIdleKeepAliveConnectionsBounded runs the binary and opens more
// keep-alive connections than server.MaxIdleConns, each left idle after
// one request: those beyond the bound are closed at once, the rest once
// the idle timeout derived from EVENTPIPE_REQUEST_TIMEOUT has passed.
func TestIdleKeepAliveConnectionsBounded(t *testing.T) {
	const requestTimeout, extra = 6 * time.Second, 20
	p := startWith(t, "EVENTPIPE_REQUEST_TIMEOUT="+requestTimeout.String())
	addr := strings.TrimPrefix(p.URL, "http://")
	conns := make([]net.Conn, server.MaxIdleConns+extra)
	for i := range conns {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: consumer\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		conns[i] = conn
	}
	idle := server.Config{RequestTimeout: requestTimeout}.Timeouts().Idle
	type closing struct {
		took time.Duration
		err  error
	}
	closed := make(chan closing, len(conns))
	for _, conn := range conns {
		go func() {
			took, err := closedWithin(conn, idle+requestTimeout)
			closed <- closing{took, err}
		}()
	}
	// The connections beyond the bound close well before the idle timeout;
	// the others once idle for the idle timeout.
	for i := range len(conns) {
		c := <-closed
		switch {
		case c.err != nil:
			t.Fatalf("%d of %d idle connections closed: %v", i, len(conns), c.err)
		case i < extra && c.took >= idle/2:
			t.Fatalf("only %d of the %d connections beyond the idle bound were closed before %v", i, extra, c.took)
		}
	}
}

// freezer is a TCP proxy in front of PostgreSQL that can stop forwarding
// (a store that hangs: a partition, a frozen server) while keeping every
// connection open.
type freezer struct {
	ln       net.Listener
	target   string
	mu       sync.Mutex
	frozen   bool
	thaw     chan struct{}
	stuck    chan struct{} // closed when bytes arrive while frozen
	stuckOne sync.Once
}

func newFreezer(t *testing.T, target string) *freezer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &freezer{ln: ln, target: target, thaw: make(chan struct{}), stuck: make(chan struct{})}
	t.Cleanup(func() { _ = ln.Close(); f.unfreeze() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go f.serve(c)
		}
	}()
	return f
}

func (f *freezer) serve(c net.Conn) {
	defer c.Close()
	up, err := net.Dial("tcp", f.target)
	if err != nil {
		return
	}
	defer up.Close()
	go f.pipe(c, up)
	f.pipe(up, c)
}

// pipe copies from src to dst, holding what it reads while frozen.
func (f *freezer) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			f.mu.Lock()
			frozen, thaw := f.frozen, f.thaw
			f.mu.Unlock()
			if frozen {
				f.stuckOne.Do(func() { close(f.stuck) })
				<-thaw
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (f *freezer) freeze() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.frozen = true
}

func (f *freezer) unfreeze() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.frozen {
		f.frozen = false
		close(f.thaw)
		f.thaw = make(chan struct{})
	}
}

// pushAnswer is a push's answer: status and outcome, or no answer.
type pushAnswer struct {
	msg     int // which message
	code    int
	outcome string
	err     error
}

func pushTo(url string, body []byte) pushAnswer {
	resp, err := http.Post(url+"/pubsub/push", "application/json", bytes.NewReader(body))
	if err != nil {
		return pushAnswer{err: err}
	}
	defer resp.Body.Close()
	var out struct{ Outcome string }
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return pushAnswer{code: resp.StatusCode, outcome: out.Outcome}
}

// TestShutdownDeadlineWithStuckStore runs the binary on PostgreSQL behind
// a proxy that stops forwarding while pushes are in flight, then sends
// SIGTERM with EVENTPIPE_SHUTDOWN_TIMEOUT=3s: the process exits within
// the timeout (plus a margin for exiting), the cut is logged, and nothing
// was acked that did not commit: every push answered 2xx is found
// committed (a duplicate) when it is delivered again to a new process on
// the same database, once the store answers again.
func TestShutdownDeadlineWithStuckStore(t *testing.T) {
	const shutdownTimeout, stuck = 3 * time.Second, 4
	pg := pgtest.Start(t)
	dbURL, err := pg.NewDatabase(context.Background(), "shutdown")
	if err != nil {
		t.Fatal(err)
	}
	f := newFreezer(t, "127.0.0.1:"+strconv.Itoa(pg.Port))
	proxied := strings.Replace(dbURL, ":"+strconv.Itoa(pg.Port)+"/", ":"+strconv.Itoa(f.ln.Addr().(*net.TCPAddr).Port)+"/", 1)
	env := func(store string) proctest.Options {
		return proctest.Options{Base: []string{"PATH=" + os.Getenv("PATH")},
			Env: []string{"EVENTPIPE_STORE=" + store, "EVENTPIPE_SHUTDOWN_TIMEOUT=" + shutdownTimeout.String()}}
	}
	p := proctest.Start(t, consumerBinary(t), env(proxied))
	body := func(i int) []byte {
		data := fmt.Sprintf(`{"service":"svc-%d","status":"healthy","producedAt":"2026-01-02T03:04:05Z"}`, i)
		return []byte(fmt.Sprintf(`{"message":{"data":%q,"messageId":"%d","publishTime":"2026-01-02T03:04:06Z"},"subscription":"projects/p/subscriptions/system-events"}`,
			b64(data), 5000+i))
	}
	if a := pushTo(p.URL, body(0)); a.code != http.StatusOK {
		t.Fatalf("push before the store hangs: %+v", a)
	}
	f.freeze()
	answers := make(chan pushAnswer, stuck)
	for i := 1; i <= stuck; i++ {
		go func() {
			a := pushTo(p.URL, body(i))
			a.msg = i
			answers <- a
		}()
	}
	select {
	case <-f.stuck:
	case <-time.After(30 * time.Second):
		t.Fatal("no delivery reached the store within 30s")
	}
	sigterm := time.Now()
	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(shutdownTimeout + 30*time.Second):
		t.Fatalf("still running %v after SIGTERM with EVENTPIPE_SHUTDOWN_TIMEOUT=%v", time.Since(sigterm), shutdownTimeout)
	}
	if took := time.Since(sigterm); took > shutdownTimeout+2*time.Second {
		t.Fatalf("exited %v after SIGTERM, want within EVENTPIPE_SHUTDOWN_TIMEOUT=%v (and a margin to exit)", took, shutdownTimeout)
	}
	var cut []map[string]any
	for _, l := range jsonLines(t, p) {
		if strings.HasPrefix(fmt.Sprint(l["message"]), "shutdown deadline") {
			cut = append(cut, l)
		}
	}
	if len(cut) != 1 {
		t.Fatalf("cut logged as %v, want one line", cut)
	}
	if n, _ := cut[0]["in_flight_requests"].(float64); n < 1 {
		t.Fatalf("cut logged as %v, want it to name the requests in flight", cut[0])
	}
	acked := map[int]bool{}
	for range stuck {
		if a := <-answers; a.err == nil && a.code >= 200 && a.code < 300 {
			acked[a.msg] = true
		}
	}
	f.unfreeze()
	again := proctest.Start(t, consumerBinary(t), env(dbURL))
	defer again.Stop(t)
	for i := 1; i <= stuck; i++ {
		a := pushTo(again.URL, body(i))
		if a.code != http.StatusOK {
			t.Fatalf("redelivery of message %d: %+v", i, a)
		}
		if acked[i] && a.outcome != "duplicate" {
			t.Fatalf("message %d was acked while the store hung but had not committed (redelivery: %s)", i, a.outcome)
		}
	}
}
