package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/devpipe"
	"github.com/eventpipe/eventpipe/internal/testing/docblock"
	"github.com/eventpipe/eventpipe/spec"
)

// TestDevQuickstart runs the README's run command, go run ./cmd/eventpipe
// dev, as it is: it must print the table, a progress line and exit 0.
func TestDevQuickstart(t *testing.T) {
	t.Parallel() // a whole local pipeline of its own (own data dir, no --serve port): mostly waiting on pstest
	dir := t.TempDir()
	out, errOut, err := executeLog(t, "dev", "--data-dir", dir)
	if err != nil {
		t.Fatalf("eventpipe dev: exit %d: %v\n%s\n%s", ExitCode(err), err, out, errOut)
	}
	// Every event of phases 1 and 3 is applied; phase 2's duplicates, older
	// events and poison end duplicate, stale and dead-lettered.
	d := devpipe.DefaultScenario()
	exp := devpipe.Row{Published: 2*d.Events + d.Duplicates + d.OutOfOrder + d.Poison, Applied: 2 * d.Events,
		Duplicate: d.Duplicates, Stale: d.OutOfOrder, DeadLettered: d.Poison}
	for _, pipeline := range []string{"documents", "ingest-heartbeat", "system-events"} {
		var row []string
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) > 0 && f[0] == pipeline {
				row = f
			}
		}
		// pipeline subscription published applied duplicate stale dead-lettered poison-acked retried lost
		if len(row) != 10 {
			t.Fatalf("no row for %s in\n%s", pipeline, out)
		}
		want := []string{strconv.Itoa(exp.Published), strconv.Itoa(exp.Applied), strconv.Itoa(exp.Duplicate), strconv.Itoa(exp.Stale), strconv.Itoa(exp.DeadLettered), "0"}
		if strings.Join(row[2:8], " ") != strings.Join(want, " ") || row[9] != "0" || row[8] == "0" {
			t.Errorf("%s row %v, want counts %v, some retries and 0 lost", pipeline, row, want)
		}
	}
	if !strings.Contains(out, "nothing lost") || !strings.Contains(errOut, "dev: phase 3/3 (store outage)") {
		t.Errorf("missing verdict or progress lines:\n%s\n%s", out, errOut)
	}
	// Every delivery left one consumer JSON line with the contract's fields.
	f, err := os.Open(filepath.Join(dir, "consumer.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	outcomes := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l map[string]any
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			t.Fatalf("consumer.log line is not JSON: %s", sc.Text())
		}
		if o, ok := l["outcome"].(string); ok && l["messageId"] != nil {
			outcomes[o]++
		}
	}
	for _, o := range []string{"applied", "duplicate", "stale_ignored", "poison", "retry"} {
		if outcomes[o] == 0 {
			t.Errorf("consumer.log has no %s line (outcomes %v)", o, outcomes)
		}
	}
}

func TestDevRejectsBadInput(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"dev", "--stack", "nope"}, `no config for stack "nope"`},
		{[]string{"dev", "--duplicates", "100"}, "duplicates 100: must be 0–events"},
		{[]string{"dev", "--backoff-scale", "-1"}, "--backoff-scale -1"},
	}
	for _, tc := range tests {
		_, _, err := executeLog(t, tc.args...)
		if ExitCode(err) != 2 || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: exit %d, %v; want exit 2 mentioning %q", tc.args, ExitCode(err), err, tc.want)
		}
	}
}

// TestDevExitsOneWhenMessagesAreLost: when messages have not reached a
// final state by the end of a phase, the run reports them lost and exits 1.
func TestDevExitsOneWhenMessagesAreLost(t *testing.T) {
	f := devFlags{stack: spec.Selection{Stack: "dev"}, dataDir: t.TempDir(), scenario: devpipe.DefaultScenario()}
	f.scenario.Events, f.scenario.Duplicates, f.scenario.OutOfOrder, f.scenario.Poison = 5, 0, 0, 0
	f.scenario.Settle = time.Nanosecond // nothing can settle in time
	var out, errOut strings.Builder
	err := runDev(context.Background(), &out, &errOut, f)
	if ExitCode(err) != 1 || !strings.Contains(err.Error(), "never reached a final state (lost)") {
		t.Fatalf("exit %d, %v; want 1 with the lost messages named\n%s", ExitCode(err), err, out.String())
	}
	if !strings.Contains(out.String(), "pipeline") {
		t.Errorf("the table is printed even when messages were lost:\n%s", out.String())
	}
}

// TestDevServePrintsHowToUseIt runs --serve until its context ends and
// checks the instructions it prints.
func TestDevServePrintsHowToUseIt(t *testing.T) {
	f := devFlags{stack: spec.Selection{Stack: "dev"}, dataDir: t.TempDir(), serve: true, addr: "127.0.0.1:0", scenario: devpipe.DefaultScenario()}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var out, errOut strings.Builder
	if err := runDev(ctx, &out, &errOut, f); err != nil {
		t.Fatalf("serve: %v", err)
	}
	for _, want := range []string{"/publish/system-events", "/stats", "export PUBSUB_EMULATOR_HOST=127.0.0.1:",
		" eventpipe replay --subscription projects/eventpipe-dev/subscriptions/system-events-materializer.dlq-sub --topic projects/eventpipe-dev/topics/system-events",
		"consumer.log"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--serve output lacks %q:\n%s", want, out.String())
		}
	}
}

// sharedTopicStack has what pstest models worst: two pipelines reading one existing
// topic, and one of them with two push and a pull subscription on it.
const sharedTopicStack = `config:
  eventpipe:project: acme-prod
  eventpipe:projectNumber: "123456789012"
  eventpipe:pipelines:
    orders:
      topic:
        existing: projects/checkout-prod/topics/order-events
      consumer:
        image: europe-west1-docker.pkg.dev/acme-prod/eventpipe/consumer:1.4.0
        minInstances: 1
      subscriptions:
        materializer:
          delivery: push
        mirror:
          delivery: push
        export:
          delivery: pull
    audit-log:
      topic:
        existing: projects/checkout-prod/topics/order-events
      consumer:
        image: europe-west1-docker.pkg.dev/acme-prod/eventpipe/consumer:1.4.0
      subscriptions:
        copy:
          delivery: push
`

// TestDevRunsEveryStack runs `eventpipe dev` to the end on every shipped
// stack (stacks/Pulumi.*.yaml; dev is TestDevQuickstart), on the README's
// "Configuring a stack" example, and on subscriptions sharing a topic: each
// must exit 0 with nothing lost, and say in one line which settings were
// adapted to pstest (14d DLQ retention).
func TestDevRunsEveryStack(t *testing.T) {
	skipShort(t, "runs eventpipe dev to the end once per shipped stack (TestDevQuickstart runs dev)")
	files, err := filepath.Glob(filepath.Join("..", "..", "stacks", "Pulumi.*.yaml"))
	if err != nil || len(files) < 3 {
		t.Fatalf("shipped stacks: %v %v", files, err)
	}
	type run struct {
		name, stack, config string
		scenario            []string
	}
	var runs []run
	for _, f := range files {
		stack := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "Pulumi."), ".yaml")
		if stack != "dev" {
			runs = append(runs, run{name: stack, stack: stack})
		}
	}
	readme := filepath.Join(t.TempDir(), "stack.yaml")
	if err := os.WriteFile(readme, []byte(docblock.Example(t, "README.md", "stack")), 0o600); err != nil {
		t.Fatal(err)
	}
	runs = append(runs, run{name: "readme", stack: "prod", config: readme})
	shared := filepath.Join(t.TempDir(), "Pulumi.shared.yaml")
	if err := os.WriteFile(shared, []byte(sharedTopicStack), 0o600); err != nil {
		t.Fatal(err)
	}
	runs = append(runs, run{name: "shared-topic", stack: "shared", config: shared,
		scenario: []string{"--events", "5", "--duplicates", "2", "--out-of-order", "2", "--poison", "2"}})
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel() // mostly waiting: pull retries are whole seconds in pstest
			args := []string{"dev", "--stack", r.stack, "--data-dir", t.TempDir()}
			if r.config != "" {
				args = append(args, "--stack-file", r.config)
			}
			args = append(args, r.scenario...)
			out, errOut, err := executeLog(t, args...)
			if err != nil {
				t.Fatalf("eventpipe %s: exit %d: %v\n%s\n%s", strings.Join(args, " "), ExitCode(err), err, out, errOut)
			}
			if !strings.Contains(out, "nothing lost") {
				t.Errorf("no verdict:\n%s", out)
			}
			var adapted []string
			for _, l := range strings.Split(errOut, "\n") {
				if strings.HasPrefix(l, "dev: adapted to pstest:") {
					adapted = append(adapted, l)
				}
			}
			if len(adapted) != 1 || !strings.Contains(adapted[0], "message retention 14d") {
				t.Errorf("want one line saying the 14d DLQ retention runs as pstest's 7d, got %q", adapted)
			}
		})
	}
}

// TestDevServeCtrlCRemovesItsFolder starts `eventpipe dev --serve` as a process (this
// test binary running main), waits until it runs, sends SIGINT as Ctrl-C does, and
// checks it exits 0 and leaves no temporary folder behind.
func TestDevServeCtrlCRemovesItsFolder(t *testing.T) {
	tmp := t.TempDir()
	cmd := exec.Command(os.Args[0], "dev", "--serve", "--addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), asCLIEnv+"=1", "TMPDIR="+tmp)
	cmd.Dir = "."
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	running := false
	for !running && sc.Scan() {
		running = strings.Contains(sc.Text(), "is running")
	}
	if !running {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("dev --serve did not start:\n%s", stderr.String())
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	if left, _ := filepath.Glob(filepath.Join(tmp, "eventpipe-dev-*")); len(left) != 1 {
		t.Fatalf("while running: temporary folders %v, want one", left)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("after SIGINT: %v\n%s", err, stderr.String())
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "eventpipe-dev-*")); len(left) != 0 {
		t.Errorf("after Ctrl-C the temporary folder is still there: %v", left)
	}
}

// TestDevDataDir: a relative --data-dir works (made absolute for the bbolt:// store
// URLs) and holds the run's files; a --data-dir a failed run created is removed, one
// that existed before is kept.
func TestDevDataDir(t *testing.T) {
	stacks, err := filepath.Abs(filepath.Join("..", "..", "stacks"))
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	out, errOut, err := executeLog(t, "dev", "--stack-dir", stacks, "--data-dir", "rel-data", "--events", "3", "--duplicates", "1", "--out-of-order", "1", "--poison", "0")
	if err != nil {
		t.Fatalf("dev --data-dir rel-data: %v\n%s\n%s", err, out, errOut)
	}
	if _, err := os.Stat(filepath.Join("rel-data", "consumer.log")); err != nil {
		t.Errorf("rel-data holds no consumer.log: %v", err)
	}
	// --addr already taken: the run fails after making its folder.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, pre := range []bool{false, true} {
		dir := fmt.Sprintf("failed-%v", pre)
		if pre {
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		_, _, err := executeLog(t, "dev", "--stack-dir", stacks, "--serve", "--addr", ln.Addr().String(), "--data-dir", dir)
		if ExitCode(err) != 2 {
			t.Fatalf("dev --serve on a taken --addr: exit %d, %v", ExitCode(err), err)
		}
		_, statErr := os.Stat(dir)
		if pre != (statErr == nil) {
			t.Errorf("--data-dir %s (existed before: %v) after a failed run: stat %v", dir, pre, statErr)
		}
	}
}

// TestNothingApplied: a subscription is flagged exactly when it published something and
// its routes took none of it (every message ended poison: dead-lettered or acked as
// poison), over every split of up to 4 messages among the five outcomes, filtered
// subscriptions never. One whose messages all ended duplicate (another subscription of
// its pipeline applied them first: TestDevRunsEveryStack's shared topic) is not flagged.
func TestNothingApplied(t *testing.T) {
	for published := 0; published <= 4; published++ {
		for applied := 0; applied <= published; applied++ {
			for dup := 0; applied+dup <= published; dup++ {
				for dead := 0; applied+dup+dead <= published; dead++ {
					for acked := 0; applied+dup+dead+acked <= published; acked++ {
						stale := published - applied - dup - dead - acked
						for _, filtered := range []bool{false, true} {
							r := devpipe.Row{Pipeline: "p", Subscription: "s", Published: published, Applied: applied,
								Duplicate: dup, Stale: stale, DeadLettered: dead, PoisonAcked: acked, Filtered: filtered}
							got := len(nothingApplied([]devpipe.Row{r})) == 1
							want := published > 0 && !filtered && dead+acked == published
							if got != want {
								t.Errorf("%+v: flagged %v, want %v", r, got, want)
							}
						}
					}
				}
			}
		}
	}
}
