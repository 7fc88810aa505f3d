// Package proctest runs a built binary as a real child process for tests: on a free
// loopback port, with its output collected line by line, started once its health
// endpoint answers, and ended by SIGTERM (a clean exit is checked) or by SIGKILL (the
// signal is checked). The consumer's binary tests and the integration runs use it.
package proctest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/devpipe"
	"github.com/eventpipe/eventpipe/internal/testing/gobuild"
)

// Options configures Start.
type Options struct {
	// Env holds KEY=VALUE pairs added on top of Base (later pairs win).
	Env []string
	// Base is the environment under Env; nil means this process's environment.
	Base []string
	// Tee, when set, also receives everything the process writes.
	Tee io.Writer
	// Health is the path polled until it answers 200 (default "/healthz").
	Health string
	// Ready bounds the wait for health (default 10 s).
	Ready time.Duration
}

// Proc is a running child process.
type Proc struct {
	// Cmd is the started command.
	Cmd *exec.Cmd
	// Port is the loopback port given to the process as PORT.
	Port int
	// URL is http://127.0.0.1:Port.
	URL string

	mu    sync.Mutex
	lines [][]byte
	done  chan struct{}
	err   error
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// ClosedAddr returns a loopback host:port nothing listens on (a port that
// was free a moment ago): where a test needs a connection to be refused.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	return fmt.Sprintf("127.0.0.1:%d", FreePort(t))
}

// Start runs bin with PORT set to a free port and waits until its health endpoint
// answers 200. The process is killed when the test ends; a failed test logs its output.
func Start(t testing.TB, bin string, opts Options) *Proc {
	t.Helper()
	base := opts.Base
	if base == nil {
		base = os.Environ()
	}
	p := &Proc{Port: FreePort(t), done: make(chan struct{})}
	p.URL = fmt.Sprintf("http://127.0.0.1:%d", p.Port)
	p.Cmd = exec.Command(bin)
	p.Cmd.Env = append(append(append([]string(nil), base...), fmt.Sprintf("PORT=%d", p.Port)), opts.Env...)
	var w io.Writer = devpipe.NewLineWriter(p.add)
	if opts.Tee != nil {
		w = io.MultiWriter(w, opts.Tee)
	}
	p.Cmd.Stdout, p.Cmd.Stderr = w, w
	if err := p.Cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	go func() { p.err = p.Cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = p.Cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("output of %s:\n%s", bin, p.Output())
		}
	})
	health, ready := opts.Health, opts.Ready
	if health == "" {
		health = "/healthz"
	}
	if ready == 0 {
		ready = 10 * time.Second
	}
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(ready)
	for {
		if resp, err := client.Get(p.URL + health); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		select {
		case <-p.done:
			t.Fatalf("%s exited before becoming healthy: %v\n%s", bin, p.err, p.Output())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not healthy on %s after %v\n%s", bin, p.URL+health, ready, p.Output())
		}
	}
}

func (p *Proc) add(line []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lines = append(p.lines, append([]byte(nil), line...))
}

// Raw returns every output line so far, as written.
func (p *Proc) Raw() [][]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([][]byte(nil), p.lines...)
}

// Output is the output so far as one text.
func (p *Proc) Output() string {
	var b strings.Builder
	for _, l := range p.Raw() {
		b.Write(l)
		b.WriteByte('\n')
	}
	return b.String()
}

// Lines returns the output lines that are JSON objects, decoded; other lines are skipped.
func (p *Proc) Lines() []map[string]any {
	var out []map[string]any
	for _, l := range p.Raw() {
		var m map[string]any
		if json.Unmarshal(l, &m) == nil && m != nil {
			out = append(out, m)
		}
	}
	return out
}

// Done is closed when the process has exited; Err then says how.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Err is the process's exit error (nil for exit 0), once Done is closed.
func (p *Proc) Err() error {
	<-p.done
	return p.err
}

// Stop sends SIGTERM and checks that the process exits cleanly within 30 s.
func (p *Proc) Stop(t testing.TB) {
	t.Helper()
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatal("process did not stop within 30s of SIGTERM")
	}
	if p.err != nil {
		t.Errorf("exit after SIGTERM: %v", p.err)
	}
}

// WaitKilled waits up to 30 s for the process to end and checks that SIGKILL ended it
// (a failpoint that kills the process, for instance).
func (p *Proc) WaitKilled(t testing.TB) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatal("process still running after 30s; nothing killed it")
	}
	var exit *exec.ExitError
	if !errors.As(p.err, &exit) {
		t.Fatalf("process ended with %v, want SIGKILL", p.err)
	}
	if ws, ok := exit.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("process ended with %v, want SIGKILL", exit)
	}
}

// Binary is a Go command built on first use for tests that run it as a
// process, with the default build settings (so the packages compiled for the
// tests are reused) and gobuild.LinkFlags. Keep one per test binary; Remove it in
// TestMain.
type Binary struct {
	// Pkg is the package to build, as go build takes it (".", "../../cmd/consumer").
	Pkg string

	once sync.Once
	path string
	err  error
}

// Path builds the command once into a temporary directory and returns its
// path; a failed build fails the test with go build's output.
func (b *Binary) Path(t testing.TB) string {
	t.Helper()
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "proctest-bin")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, "bin")
		if out, err := exec.Command("go", "build", "-ldflags="+gobuild.LinkFlags, "-o", b.path, b.Pkg).CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build %s: %w\n%s", b.Pkg, err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// Remove deletes the built command, if any.
func (b *Binary) Remove() {
	if b.path != "" {
		_ = os.RemoveAll(filepath.Dir(b.path))
	}
}
