package pushload

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/eventpipe/eventpipe/consumer/settings"
)

// Consumer is a consumer binary to measure.
type Consumer struct {
	// Name labels its runs ("base", "this").
	Name string
	// Bin is the built cmd/consumer.
	Bin string
}

// Process is a consumer binary running with a PostgreSQL store: its own
// process on a loopback port, its log lines read from a pipe (as Cloud
// Run's agent reads them) and counted.
type Process struct {
	cmd    *exec.Cmd
	url    string
	client *http.Client
	// applied counts the log lines of applied messages.
	applied atomic.Int64
	lines   atomic.Int64
	logDone chan struct{}
	exited  chan struct{}
	waitErr error
}

// StartConsumer starts c on the store at storeURL with senders keep-alive
// connections and waits until it is healthy. extraEnv is added to the
// environment (KEY=VALUE).
func StartConsumer(ctx context.Context, c Consumer, storeURL string, senders int, extraEnv ...string) (*Process, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(c.Bin)
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port), settings.Store+"="+storeURL, settings.Environment+"="+Environment,
		settings.Service+"=pushload")
	cmd.Env = append(cmd.Env, extraEnv...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = cmd.Stdout
	p := &Process{cmd: cmd, url: fmt.Sprintf("http://127.0.0.1:%d", port), logDone: make(chan struct{}), exited: make(chan struct{}),
		client: &http.Client{Transport: &http.Transport{MaxIdleConns: senders, MaxIdleConnsPerHost: senders}}}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", c.Bin, err)
	}
	go p.readLog(out)
	go func() {
		<-p.logDone
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := p.client.Get(p.url + "/healthz")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		select {
		case <-p.exited:
			return nil, fmt.Errorf("%s exited before it was healthy: %v", c.Name, p.waitErr)
		case <-ctx.Done():
			p.Kill()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.Kill()
			return nil, fmt.Errorf("%s not healthy after 30 s", c.Name)
		}
	}
}

var appliedField = []byte(`"outcome":"applied"`)

// readLog counts the lines and the applied outcomes.
func (p *Process) readLog(r io.Reader) {
	defer close(p.logDone)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		p.lines.Add(1)
		if bytes.Contains(sc.Bytes(), appliedField) {
			p.applied.Add(1)
		}
	}
	_, _ = io.Copy(io.Discard, r)
}

// Applied returns how many log lines so far say applied.
func (p *Process) Applied() int64 { return p.applied.Load() }

// Send pushes m and fails unless the answer is 2xx (an ack).
func (p *Process) Send(ctx context.Context, m *Message) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url+"/pubsub/push", bytes.NewReader(m.Body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// Memory returns the process's resident memory now and its peak, in
// bytes (/proc/PID/status VmRSS and VmHWM).
func (p *Process) Memory() (rss, peak int64, err error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		name, value, ok := strings.Cut(line, ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", line, err)
		}
		if name == "VmRSS" {
			rss = kb << 10
		} else {
			peak = kb << 10
		}
	}
	return rss, peak, nil
}

// clockTicks is Linux's USER_HZ, the unit of /proc/PID/stat's CPU times
// (100 on every architecture Go's Linux ports run on; sysconf(_SC_CLK_TCK)).
const clockTicks = 100

// CPU returns the process's CPU time so far, user and system
// (/proc/PID/stat fields 14 and 15, in clock ticks).
func (p *Process) CPU() (time.Duration, error) {
	f, err := statFields(p.cmd.Process.Pid)
	if err != nil {
		return 0, err
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// Stop ends the process with SIGTERM (SIGKILL after 15 s) and waits for it.
func (p *Process) Stop() error {
	p.client.CloseIdleConnections()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(15 * time.Second):
		p.Kill()
		return fmt.Errorf("no exit 15 s after SIGTERM")
	}
	return p.waitErr
}

// Kill ends the process with SIGKILL and waits for it.
func (p *Process) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
