package main

import (
	"bufio"
	"bytes"
	"encoding/json"
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

	"github.com/eventpipe/eventpipe/consumer/logfields"
	"github.com/eventpipe/eventpipe/consumer/route"
)

// proc is a running consumer binary.
type proc struct {
	cmd    *exec.Cmd
	port   string
	mu     sync.Mutex
	stdout bytes.Buffer
	exited chan error
}

func (p *proc) lines(t *testing.T) []map[string]any {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(p.stdout.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("stdout line is not JSON: %q", l)
		}
		out = append(out, m)
	}
	return out
}

type lockedWriter struct{ p *proc }

func (w lockedWriter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	return w.p.stdout.Write(b)
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// startBinary runs the consumer with env added to a minimal environment and
// waits until /healthz answers 200.
func startBinary(t *testing.T, env ...string) *proc {
	t.Helper()
	p := &proc{port: freePort(t), exited: make(chan error, 1)}
	p.cmd = exec.Command(consumerBinary(t))
	p.cmd.Env = append([]string{"PORT=" + p.port, "PATH=" + os.Getenv("PATH"),
		"EVENTPIPE_STORE=bbolt://" + filepath.Join(t.TempDir(), "consumer.db")}, env...)
	p.cmd.Stdout = lockedWriter{p}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://127.0.0.1:" + p.port + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return p
			}
		}
		select {
		case err := <-p.exited:
			t.Fatalf("consumer exited before becoming healthy: %v\n%s", err, p.stdout.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("consumer not healthy after 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// readmeBlock returns the fenced block that follows marker in README.md.
func readmeBlock(t *testing.T, marker string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var block []string
	state := 0 // 0 before marker, 1 before fence, 2 inside
	for sc.Scan() {
		l := sc.Text()
		switch {
		case state == 0 && strings.Contains(l, marker):
			state = 1
		case state == 1 && strings.HasPrefix(l, "```"):
			state = 2
		case state == 2 && strings.HasPrefix(l, "```"):
			return block
		case state == 2:
			block = append(block, l)
		}
	}
	t.Fatalf("README has no block after %q", marker)
	return nil
}

// TestREADMEPushExample runs the README's curl example against the real
// binary (as `go run ./cmd/consumer` would start it, on the embedded store),
// checks the answer and the log line, then stops it with SIGTERM.
func TestREADMEPushExample(t *testing.T) {
	block := readmeBlock(t, "consumer-push-example")
	if len(block) == 0 || !strings.HasPrefix(block[0], "go run ./cmd/consumer") {
		t.Fatalf("README example should start the consumer with go run: %q", block)
	}
	p := startBinary(t)
	script := strings.ReplaceAll(strings.Join(block[1:], "\n"), "localhost:8080", "127.0.0.1:"+p.port)
	run := func() string {
		out, err := exec.Command("bash", "-euo", "pipefail", "-c", script).CombinedOutput()
		if err != nil {
			t.Fatalf("README example failed: %v\n%s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if out := run(); out != `{"outcome":"applied"}` {
		t.Fatalf("first push answered %q", out)
	}
	if out := run(); out != `{"outcome":"duplicate"}` {
		t.Fatalf("second push answered %q", out)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.exited:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no exit within 10s of SIGTERM")
	}
	var applied map[string]any
	for _, l := range p.lines(t) {
		if l["outcome"] == "applied" {
			applied = l
		}
	}
	want := map[string]any{"severity": "INFO", "service": "eventpipe-consumer", "env": "dev", "messageId": "1001",
		"route": "system_events", "doc_path": "ops_services/dev__checkout", "http_status": float64(200), "ack_action": "ack",
		"subscription": "projects/demo/subscriptions/system-events", "topic": "system-events"}
	for k, v := range want {
		if applied[k] != v {
			t.Errorf("log %s = %v, want %v (line %v)", k, applied[k], v, applied)
		}
	}
	last := p.lines(t)[len(p.lines(t))-1]
	if last["message"] != "consumer stopped" {
		t.Errorf("last line %v, want the clean stop", last)
	}
}

func TestBadConfigurationExits(t *testing.T) {
	cmd := exec.Command(consumerBinary(t))
	cmd.Env = []string{"EVENTPIPE_DLQ=maybe", "PORT=" + freePort(t)}
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	err := cmd.Run()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 2 {
		t.Fatalf("want exit 2, got %v", err)
	}
	if !strings.Contains(stdout.String(), `"severity":"CRITICAL"`) || !strings.Contains(stdout.String(), "EVENTPIPE_DLQ") {
		t.Fatalf("stdout %s", stdout.String())
	}
}

// TestREADMERoutesExample keeps the README's lease route example valid.
func TestREADMERoutesExample(t *testing.T) {
	f, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(f), "\"name\": \"document_processing\"")
	if !ok {
		t.Fatal("README lost its lease route example")
	}
	start := strings.LastIndex(string(f[:len(f)-len(rest)]), "```json\n")
	end := strings.Index(rest, "```")
	example := string(f[start+len("```json\n"):len(f)-len(rest)]) + rest[:end]
	if _, err := route.Parse([]byte(example)); err != nil {
		t.Fatalf("README routes example: %v\n%s", err, example)
	}
}

// TestREADMEDocumentsEveryLogField keeps the README's "Log fields" table in
// step with consumer/logfields, which alert metrics are built on.
func TestREADMEDocumentsEveryLogField(t *testing.T) {
	f, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(f), "### Log fields")
	if !ok {
		t.Fatal(`README lost its "### Log fields" section`)
	}
	section, _, _ = strings.Cut(section, "\n### ")
	for _, k := range logfields.All() {
		if !strings.Contains(section, "`"+k+"`") {
			t.Errorf("README's Log fields table does not document %q", k)
		}
	}
}
