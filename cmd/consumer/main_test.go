package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/consumer/route"
	"github.com/eventpipe/eventpipe/internal/testing/docblock"
	"github.com/eventpipe/eventpipe/internal/testing/proctest"
)

// startBinary runs the consumer on the embedded bbolt store (as `go run
// ./cmd/consumer` would) in a minimal environment, and waits until /healthz
// answers 200.
func startBinary(t *testing.T) *proctest.Proc {
	t.Helper()
	return startWith(t)
}

// jsonLines returns the process's output lines decoded, failing the test on
// any line that is not a JSON object: the consumer logs nothing else.
func jsonLines(t *testing.T, p *proctest.Proc) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range p.Raw() {
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatalf("output line is not JSON: %q", l)
		}
		out = append(out, m)
	}
	return out
}

// docBlock returns the lines of the fenced block that follows marker in doc (docs/consumer.md).
func docBlock(t *testing.T, doc, marker string) []string {
	t.Helper()
	return strings.Split(strings.TrimSuffix(docblock.After(t, doc, marker, ""), "\n"), "\n")
}

// TestREADMEPushExample runs the first-run curl example of docs/consumer.md against the real
// binary (as `go run ./cmd/consumer` would start it, on the embedded store),
// checks the answer and the log line, then stops it with SIGTERM.
func TestREADMEPushExample(t *testing.T) {
	block := docBlock(t, "docs/consumer.md", "consumer-push-example")
	if len(block) == 0 || !strings.HasPrefix(block[0], "go run ./cmd/consumer") {
		t.Fatalf("docs/consumer.md example should start the consumer with go run: %q", block)
	}
	p := startBinary(t)
	script := strings.ReplaceAll(strings.Join(block[1:], "\n"), "localhost:8080", "127.0.0.1:"+strconv.Itoa(p.Port))
	run := func() string {
		out, err := exec.Command("bash", "-euo", "pipefail", "-c", script).CombinedOutput()
		if err != nil {
			t.Fatalf("docs/consumer.md example failed: %v\n%s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if out := run(); out != `{"outcome":"applied"}` {
		t.Fatalf("first push answered %q", out)
	}
	if out := run(); out != `{"outcome":"duplicate"}` {
		t.Fatalf("second push answered %q", out)
	}
	p.Stop(t)
	lines := jsonLines(t, p)
	var applied map[string]any
	for _, l := range lines {
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
	// The log line docs/consumer.md shows: every field it shows, with the value it shows unless that is
	// elided ("…") or a measurement.
	var shown map[string]any
	if err := json.Unmarshal([]byte(strings.Join(docBlock(t, "docs/consumer.md", "and the consumer prints one JSON line:"), "")), &shown); err != nil {
		t.Fatalf("docs/consumer.md log line: %v", err)
	}
	for k, v := range shown {
		if s, ok := v.(string); (ok && strings.Contains(s, "…")) || k == "latency_ms" {
			continue
		}
		if applied[k] != v {
			t.Errorf("docs/consumer.md log line shows %s = %v, the consumer logs %v", k, v, applied[k])
		}
	}
	last := lines[len(lines)-1]
	if last["message"] != "consumer stopped" {
		t.Errorf("last line %v, want the clean stop", last)
	}
}

// TestREADMECallbackExample runs docs/consumer.md's callback example (against the consumer
// its first run starts) on the real binary:
// the callback alone answers 404 (no run yet), the run-started push creates the run, the
// callback then updates it once, and running both again replays.
func TestREADMECallbackExample(t *testing.T) {
	block := docBlock(t, "docs/consumer.md", "consumer-callback-example")
	callback := -1
	for i, l := range block {
		if strings.Contains(l, "/callbacks/validation") {
			callback = i
		}
	}
	if callback < 1 {
		t.Fatalf("docs/consumer.md callback example should push the run's start, then call back: %q", block)
	}
	p := startBinary(t)
	local := func(lines []string) string {
		return strings.ReplaceAll(strings.Join(lines, "\n"), "localhost:8080", "127.0.0.1:"+strconv.Itoa(p.Port))
	}
	run := func(script string) []string {
		out, err := exec.Command("bash", "-euo", "pipefail", "-c", script+"\necho").CombinedOutput()
		if err != nil {
			t.Fatalf("docs/consumer.md example failed: %v\n%s", err, out)
		}
		// curl prints each body without a newline: split the JSON values.
		var values []string
		dec := json.NewDecoder(bytes.NewReader(out))
		for {
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				break
			}
			values = append(values, string(v))
		}
		return values
	}
	decode := func(s string) map[string]any {
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatalf("answer %q: %v", s, err)
		}
		return m
	}
	if out := run(local(block[callback:])); len(out) != 1 || !strings.Contains(fmt.Sprint(decode(out[0])["error"]), "run-1") {
		t.Fatalf("callback before the run started answered %q, want the 404 error", out)
	}
	for i, want := range []struct {
		push     string
		replayed bool
	}{{"applied", false}, {"duplicate", true}} {
		out := run(local(block))
		if len(out) != 2 {
			t.Fatalf("run %d: want the push's and the callback's answers, got %q", i+1, out)
		}
		if got := decode(out[0])["outcome"]; got != want.push {
			t.Errorf("run %d: push answered %q, want outcome %s", i+1, out[0], want.push)
		}
		if cb := decode(out[1]); cb["idempotent_replayed"] != want.replayed || cb["status"] != "completed" {
			t.Errorf("run %d: callback answered %s, want idempotent_replayed %v and status completed", i+1, out[1], want.replayed)
		}
	}
	p.Stop(t)
}

// TestBadConfigurationExits: a bad value, the store URL's included, stops start-up with
// exit 2 and a CRITICAL line naming the variable (docs/consumer.md).
func TestBadConfigurationExits(t *testing.T) {
	for _, env := range []string{"EVENTPIPE_DLQ=maybe", "EVENTPIPE_STORE=nope://x"} {
		cmd := exec.Command(consumerBinary(t))
		cmd.Env = []string{env, "PORT=" + strconv.Itoa(proctest.FreePort(t))}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 2 {
			t.Fatalf("%s: want exit 2, got %v", env, err)
		}
		name, _, _ := strings.Cut(env, "=")
		if !strings.Contains(stdout.String(), `"severity":"CRITICAL"`) || !strings.Contains(stdout.String(), name) {
			t.Fatalf("%s: stdout %s", env, stdout.String())
		}
		if n := strings.Count(stderr.String(), name); n != 1 {
			t.Errorf("%s: stderr names %s %d times, want once: %s", env, name, n, stderr.String())
		}
		// The store's message reads once (issue 26: "open store: store open store: ...").
		const wantStore = `consumer: store open: configuration: EVENTPIPE_STORE "nope://x": unknown scheme "nope"; accepted schemes: mem, bbolt, postgres, postgresql, firestore (e.g. `
		if name == "EVENTPIPE_STORE" && !strings.HasPrefix(stderr.String(), wantStore) {
			t.Errorf("stderr %q, want it to start %q", stderr.String(), wantStore)
		}
	}
}

// TestConsumerDocRoutesExample keeps the lease route example of docs/consumer.md valid.
func TestConsumerDocRoutesExample(t *testing.T) {
	f, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "consumer.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(f), "\"name\": \"document_processing\"")
	if !ok {
		t.Fatal("docs/consumer.md lost its lease route example")
	}
	start := strings.LastIndex(string(f[:len(f)-len(rest)]), "```json\n")
	end := strings.Index(rest, "```")
	example := string(f[start+len("```json\n"):len(f)-len(rest)]) + rest[:end]
	if _, err := route.Parse([]byte(example)); err != nil {
		t.Fatalf("docs/consumer.md routes example: %v\n%s", err, example)
	}
}

// logFieldKeys returns the log field keys consumer/logfields declares:
// the values of its constants, but for those of the groups documented as
// "… values." (the closed value sets of some keys).
func logFieldKeys(t *testing.T) []string {
	t.Helper()
	path := filepath.Join(repoRoot(t), "consumer", "logfields", "logfields.go")
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		if first, _, _ := strings.Cut(g.Doc.Text(), "."); strings.HasSuffix(first, " values") {
			continue
		}
		for _, spec := range g.Specs {
			for _, v := range spec.(*ast.ValueSpec).Values {
				lit, ok := v.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Fatalf("%s: a log field constant that is not a string literal", path)
				}
				k, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				keys = append(keys, k)
			}
		}
	}
	if len(keys) == 0 {
		t.Fatalf("%s declares no log field keys", path)
	}
	return keys
}

// TestConsumerDocListsEveryLogField keeps the "Log fields" table of docs/consumer.md in
// step with consumer/logfields, which alert metrics are built on.
func TestConsumerDocListsEveryLogField(t *testing.T) {
	f, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "consumer.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(f), "## Log fields")
	if !ok {
		t.Fatal(`docs/consumer.md lost its "## Log fields" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	for _, k := range logFieldKeys(t) {
		if !strings.Contains(section, "`"+k+"`") {
			t.Errorf("the Log fields table of docs/consumer.md does not document %q", k)
		}
	}
}
