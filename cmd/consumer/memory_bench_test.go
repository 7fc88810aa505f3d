package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/limits"
	"github.com/eventpipe/eventpipe/internal/testing/proctest"
)

// memoryContainerBytes is the container the memory benchmark runs the
// consumer in: Cloud Run's default 512 MiB. Its GOMEMLIMIT is
// limits.MemoryLimit of it, as the Cloud Run component sets, and the
// benchmark sends as many maximum-size messages at once as the component
// lets such an instance take (limits.MaxConcurrency).
const memoryContainerBytes = 512 << 20

// memoryHeadroomPercent is the share of the container's memory that the
// peak must stay under at the derived concurrency, valid and poison
// messages alike: the rest is the margin before the container is killed.
const memoryHeadroomPercent = 85

// previousBinary is the previous release's consumer binary, built by
// scripts/consumer-memory.sh from a worktree of it, to measure side by side.
var previousBinary = flag.String("consumer.previous", "", "the previous release's consumer binary: BenchmarkPushMemory measures it beside this one")

// memoryRounds is how many times BenchmarkPushMemory measures each binary,
// alternating which goes first.
var memoryRounds = flag.Int("consumer.memory-rounds", 2, "rounds of BenchmarkPushMemory per binary")

// BenchmarkPushMemory runs the consumer binary as a real process, sends it
// as many maximum-size (10 MB) Pub/Sub messages at once as the component
// derives for the container (valid ones, applied; poison ones, whose
// payload matches no route and whose keys are megabytes long), and reports
// the process's peak resident memory (VmHWM) as MiB and as a share of the
// container, and what each message added over the idle process, as a
// multiple of its push body. Each sub-benchmark starts its own process, so
// each peak is its own. With -consumer.previous, the previous release's
// binary gets the same messages in the same run, the two alternating in
// -consumer.memory-rounds rounds (binary=previous, binary=current). A peak
// of this binary at or over memoryHeadroomPercent of the container fails the
// benchmark. Run it with -benchtime 1x (scripts/consumer-memory.sh does).
func BenchmarkPushMemory(b *testing.B) {
	bins := []struct{ name, path string }{{"current", consumerBinary(b)}}
	if *previousBinary != "" {
		bins = append(bins, struct{ name, path string }{"previous", *previousBinary})
	}
	n := limits.MaxConcurrency(memoryContainerBytes, limits.MaxMessageBytes, 1000)
	for _, kind := range []struct {
		name string
		body func(b *testing.B, i int) []byte
		want int // the status every push must get
	}{
		{"valid", maxSizePush, http.StatusOK},
		{"poison", maxSizePoison, http.StatusOK}, // acked: no dead-letter policy
	} {
		for round := range *memoryRounds {
			for i := range bins {
				bin := bins[(i+round)%len(bins)] // each goes first in turn
				b.Run(fmt.Sprintf("kind=%s/messages=%d/round=%d/binary=%s", kind.name, n, round+1, bin.name), func(b *testing.B) {
					for range b.N {
						peak, idle, body := pushMemory(b, bin.path, n, kind.body, kind.want)
						perMessage := float64(peak-idle) / float64(n)
						share := 100 * float64(peak) / memoryContainerBytes
						b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
						b.ReportMetric(share, "peak-%container")
						b.ReportMetric(perMessage/(1<<20), "MiB/msg")
						b.ReportMetric(perMessage/float64(body), "x-body/msg")
						b.ReportMetric(float64(limits.PerMessageBytes(limits.MaxMessageBytes))/(1<<20), "budget-MiB/msg")
						if bin.name == "current" && share >= memoryHeadroomPercent {
							b.Errorf("%s: peak %.1f%% of the container's memory at the derived concurrency %d, want under %d%%", kind.name, share, n, memoryHeadroomPercent)
						}
					}
				})
			}
		}
	}
}

// pushMemory starts the consumer, sends n messages made by body at once,
// each of which must be answered want, and returns its peak and idle
// resident bytes and the size of one push body.
func pushMemory(b *testing.B, bin string, n int, body func(*testing.B, int) []byte, want int) (peak, idle int64, size int) {
	b.Helper()
	p := proctest.Start(b, bin, proctest.Options{
		Base: []string{"PATH=" + os.Getenv("PATH")},
		Env: []string{"EVENTPIPE_STORE=bbolt://" + filepath.Join(b.TempDir(), "consumer.db"),
			"GOMEMLIMIT=" + strconv.FormatInt(limits.MemoryLimit(memoryContainerBytes), 10)},
	})
	defer p.Stop(b)
	bodies := make([][]byte, n)
	for i := range bodies {
		bodies[i] = body(b, i)
	}
	// One small message first, so the idle figure includes everything a
	// first message initialises.
	post(b, p.URL, maxSizePushOf(b, 1000, 10), http.StatusOK)
	idle = procStatus(b, p.Cmd.Process.Pid, "VmRSS")
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, body := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			post(b, p.URL, body, want)
		}()
	}
	close(start)
	wg.Wait()
	return procStatus(b, p.Cmd.Process.Pid, "VmHWM"), idle, len(bodies[0])
}

// maxSizePoison is the push body of a message whose data is
// limits.MaxMessageBytes long and matches no route: a JSON object of nine
// keys of about a megabyte each (a route's "no route matches" error names
// the payload's keys).
func maxSizePoison(b *testing.B, i int) []byte {
	b.Helper()
	const keys = 9
	keyLen := limits.MaxMessageBytes/keys - 16
	var data strings.Builder
	data.WriteString("{")
	for k := range keys {
		if k > 0 {
			data.WriteString(",")
		}
		fmt.Fprintf(&data, `"%d-%d-%s":%d`, i, k, strings.Repeat("k", keyLen), k)
	}
	data.WriteString("}")
	return pushOf(b, i, data.String())
}

// maxSizePush is the push body of a system event whose data is
// limits.MaxMessageBytes long.
func maxSizePush(b *testing.B, i int) []byte {
	return maxSizePushOf(b, i, limits.MaxMessageBytes)
}

// maxSizePushOf is the push body of system event i whose data is size
// bytes: the built-in route's fields and a detail string filling the rest.
func maxSizePushOf(b *testing.B, i, size int) []byte {
	b.Helper()
	head := fmt.Sprintf(`{"service":"svc-%d","status":"degraded","producedAt":"2026-01-02T03:04:05Z","detail":"`, i)
	pad := size - len(head) - len(`"}`)
	if pad < 0 {
		pad = 0
	}
	return pushOf(b, i, head+strings.Repeat("x", pad)+`"}`)
}

// pushOf is the push body of message i with data.
func pushOf(b testing.TB, i int, data string) []byte {
	b.Helper()
	env := map[string]any{
		"message": map[string]any{"data": base64.StdEncoding.EncodeToString([]byte(data)),
			"messageId": strconv.Itoa(1_000_000 + i), "publishTime": time.Date(2026, 1, 2, 3, 4, 6, 0, time.UTC).Format(time.RFC3339Nano)},
		"subscription": "projects/p/subscriptions/system-events",
	}
	out, err := json.Marshal(env)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

func post(b *testing.B, url string, body []byte, want int) {
	resp, err := http.Post(url+"/pubsub/push", "application/json", bytes.NewReader(body))
	if err != nil {
		b.Error(err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		b.Errorf("push of %d bytes: status %d, want %d", len(body), resp.StatusCode, want)
	}
}

// procStatus reads a memory figure (VmRSS, VmHWM) of process pid, in bytes.
func procStatus(b testing.TB, pid int, field string) int64 {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatalf("read the consumer's memory: %v", err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				b.Fatalf("parse %s %q: %v", field, v, err)
			}
			return kb << 10
		}
	}
	b.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}
