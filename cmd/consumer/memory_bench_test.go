package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
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
	"github.com/eventpipe/eventpipe/internal/proctest"
)

// memoryContainerBytes is the container the memory benchmark runs the
// consumer in: the smallest Cloud Run memory size (a power of two GiB) in
// which 20 maximum-size messages fit by limits.MaxConcurrency. Its
// GOMEMLIMIT is limits.MemoryLimit of it, as the Cloud Run component sets.
const memoryContainerBytes = 1 << 30

// BenchmarkPushMemory runs the consumer binary as a real process, sends it
// n maximum-size (10 MB) Pub/Sub messages at once, and reports the process's
// peak resident memory (VmHWM) and what each message added over the idle
// process, as a multiple of its push body. Each sub-benchmark starts its
// own process, so each peak is its own. Run it with -benchtime 1x
// (scripts/consumer-memory.sh does).
func BenchmarkPushMemory(b *testing.B) {
	bin := consumerBinary(b)
	for _, n := range []int{1, 5, 10, 20} {
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			for range b.N {
				peak, idle, body := pushMemory(b, bin, n)
				perMessage := float64(peak-idle) / float64(n)
				b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
				b.ReportMetric(perMessage/(1<<20), "MiB/msg")
				b.ReportMetric(perMessage/float64(body), "x-body/msg")
				b.ReportMetric(float64(limits.PerMessageBytes(limits.MaxMessageBytes))/(1<<20), "budget-MiB/msg")
			}
		})
	}
}

// pushMemory starts the consumer, sends n maximum-size messages at once and
// returns its peak and idle resident bytes and the size of one push body.
func pushMemory(b *testing.B, bin string, n int) (peak, idle int64, body int) {
	b.Helper()
	p := proctest.Start(b, bin, proctest.Options{
		Base: []string{"PATH=" + os.Getenv("PATH")},
		Env: []string{"EVENTPIPE_STORE=bbolt://" + filepath.Join(b.TempDir(), "consumer.db"),
			"GOMEMLIMIT=" + strconv.FormatInt(limits.MemoryLimit(memoryContainerBytes), 10)},
	})
	defer p.Stop(b)
	bodies := make([][]byte, n)
	for i := range bodies {
		bodies[i] = maxSizePush(b, i)
	}
	// One small message first, so the idle figure includes everything a
	// first message initialises.
	post(b, p.URL, maxSizePushOf(b, 1000, 10))
	idle = procStatus(b, p.Cmd.Process.Pid, "VmRSS")
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, body := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			post(b, p.URL, body)
		}()
	}
	close(start)
	wg.Wait()
	return procStatus(b, p.Cmd.Process.Pid, "VmHWM"), idle, len(bodies[0])
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
	data := head + strings.Repeat("x", pad) + `"}`
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

func post(b *testing.B, url string, body []byte) {
	resp, err := http.Post(url+"/pubsub/push", "application/json", bytes.NewReader(body))
	if err != nil {
		b.Error(err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Errorf("push of %d bytes: status %d", len(body), resp.StatusCode)
	}
}

// procStatus reads a memory figure (VmRSS, VmHWM) of process pid, in bytes.
func procStatus(b *testing.B, pid int, field string) int64 {
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
