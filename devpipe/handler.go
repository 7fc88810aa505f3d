package devpipe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/eventpipe/eventpipe/consumer/handler"
	"github.com/eventpipe/eventpipe/internal/english"
)

// HandlerOptions run the team's handler beside the local pipeline (eventpipe
// dev --handler): a shell command, with HANDLER_PORT (and PORT) set to a
// free loopback port, ready when a GET of HealthPath answers 2xx.
type HandlerOptions struct {
	// Command is run with sh -c.
	Command string
	// HealthPath is polled until it answers 2xx (default /healthz), as the
	// consumers do (handler.WaitReady).
	HealthPath string
	// Output receives the handler's stdout and stderr (nil: discarded).
	Output io.Writer
	// Ready bounds the wait for health (default 30 s).
	Ready time.Duration
}

// Handler is the team's handler process, behind a proxy that counts its
// calls. The consumers are given the proxy's URL as EVENTPIPE_HANDLER_URL.
type Handler struct {
	// URL is the counting proxy's base URL, what the consumers call.
	URL string
	// HealthPath is the handler's health check, which the consumers wait
	// for before they pull (EVENTPIPE_HANDLER_HEALTH_PATH); its GETs are
	// not counted as calls.
	HealthPath string

	cmd  *exec.Cmd
	done chan struct{}
	srv  *http.Server

	mu    sync.Mutex
	stats HandlerStats
	ok    map[string]bool // keys the handler answered 2xx
}

// HandlerStats count the calls the consumers made to the handler.
type HandlerStats struct {
	// Calls is every call; Deliveries those of Pub/Sub events.
	Calls, Deliveries int
	// Keys is how many distinct Idempotency-Keys were called.
	Keys int
	// Repeats are calls with a key the handler had already answered 2xx:
	// a duplicate reached it (0 unless a consumer died between the
	// handler's answer and its record: docs/handlers.md).
	Repeats int
	// Failed are calls answered otherwise than 2xx (retried later).
	Failed int
}

// StartHandler starts the handler command and its counting proxy.
func StartHandler(ctx context.Context, opts HandlerOptions) (*Handler, error) {
	if opts.Command == "" {
		return nil, errors.New("devpipe: no handler command")
	}
	if opts.HealthPath == "" {
		opts.HealthPath = handler.DefaultHealthPath
	}
	if opts.Ready == 0 {
		opts.Ready = 30 * time.Second
	}
	if opts.Output == nil {
		opts.Output = io.Discard
	}
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("devpipe: handler port: %w", err)
	}
	h := &Handler{HealthPath: opts.HealthPath, done: make(chan struct{}), ok: map[string]bool{}}
	h.cmd = exec.Command("sh", "-c", opts.Command)
	h.cmd.Env = append(os.Environ(), "HANDLER_PORT="+strconv.Itoa(port), "PORT="+strconv.Itoa(port))
	h.cmd.Stdout, h.cmd.Stderr = opts.Output, opts.Output
	h.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // Close ends the command's children too
	if err := h.cmd.Start(); err != nil {
		return nil, fmt.Errorf("devpipe: start handler %q: %w", opts.Command, err)
	}
	wait, exited := context.WithCancelCause(ctx)
	defer exited(nil)
	go func() {
		_ = h.cmd.Wait()
		close(h.done)
		exited(fmt.Errorf("the command exited (%s)", h.cmd.ProcessState))
	}()
	wait, cancel := context.WithTimeoutCause(wait, opts.Ready, fmt.Errorf("not within %s", opts.Ready))
	defer cancel()
	target := &url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(port)}
	health := handler.Config{URL: target.String(), HealthPath: opts.HealthPath}
	if err := handler.WaitReady(wait, nil, health, slog.New(slog.DiscardHandler)); err != nil {
		_ = h.Close()
		return nil, fmt.Errorf("devpipe: handler %q: %w", opts.Command, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = h.Close()
		return nil, fmt.Errorf("devpipe: handler proxy: %w", err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(resp *http.Response) error { h.count(resp.Request, resp.StatusCode); return nil }
	proxy.ErrorHandler = func(w http.ResponseWriter, r *http.Request, _ error) {
		h.count(r, http.StatusBadGateway)
		w.WriteHeader(http.StatusBadGateway)
	}
	h.srv = &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = h.srv.Serve(ln) }()
	h.URL = "http://" + ln.Addr().String()
	return h, nil
}

// count records a call and its answer (the proxy's: 502 when the handler
// could not be reached).
func (h *Handler) count(r *http.Request, status int) {
	if r.Method == http.MethodGet && r.URL.Path == h.HealthPath {
		return // a consumer waiting for the handler, not a call
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stats.Calls++
	if strings.HasPrefix(r.URL.Path, handler.ReservedPrefix) {
		h.stats.Deliveries++
	}
	key := r.Header.Get(handler.IdempotencyKeyHeader)
	if key == "" {
		return
	}
	done, seen := h.ok[key]
	if !seen {
		h.stats.Keys++
	}
	if done {
		h.stats.Repeats++
	}
	if status >= 200 && status < 300 {
		h.ok[key] = true
	} else {
		h.ok[key] = done
		h.stats.Failed++
	}
}

// Stats returns the counts so far.
func (h *Handler) Stats() HandlerStats {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stats
}

// Check reports a handler call for a key the handler had already answered
// 2xx: "nothing lost" also means no handler call for a duplicate.
func (s HandlerStats) Check() error {
	if s.Repeats > 0 {
		return fmt.Errorf("the handler was called %s for a key it had already answered 2xx", english.Count(s.Repeats, "time", "times"))
	}
	return nil
}

// String is the stats as one line of the dev report.
func (s HandlerStats) String() string {
	return fmt.Sprintf("handler: %s (%s), %s, %d failed (retried), %d repeated after a 2xx",
		english.Count(s.Calls, "call", "calls"), english.Count(s.Deliveries, "delivery", "deliveries"), english.Count(s.Keys, "key", "keys"), s.Failed, s.Repeats)
}

// Close stops the proxy, then the handler (SIGTERM to its process group,
// SIGKILL after 5 s).
func (h *Handler) Close() error {
	if h.srv != nil {
		_ = h.srv.Close()
	}
	pgid := h.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-h.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-h.done
	}
	return nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
