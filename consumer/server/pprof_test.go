package server

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/logging"
	"github.com/eventpipe/eventpipe/consumer/settings"
	ct "github.com/eventpipe/eventpipe/internal/testing/consumertest"
)

// TestPprofAddrIsLoopbackOnly: every combination of host and port is
// accepted exactly when the host is a loopback address (or localhost) and
// the port a port number; a refusal names the variable and the fix.
func TestPprofAddrIsLoopbackOnly(t *testing.T) {
	parse := func(v string) (string, error) {
		e, err := settings.Parse(env(map[string]string{settings.PprofAddr: v}))
		return e.PprofAddr, err
	}
	hosts := map[string]bool{"127.0.0.1": true, "127.1.2.3": true, "[::1]": true, "localhost": true,
		"": false, "0.0.0.0": false, "[::]": false, "10.0.0.7": false, "192.168.1.1": false, "example.com": false, "[fe80::1]": false}
	ports := map[string]bool{"6060": true, "0": true, "65535": true, "65536": false, "x": false, "-1": false}
	for host, hostOK := range hosts {
		for port, portOK := range ports {
			v := host + ":" + port
			got, err := parse(v)
			if want := hostOK && portOK; (err == nil) != want {
				t.Errorf("settings.Parse(%q) = %q, %v; want accepted %v", v, got, err, want)
				continue
			}
			if err != nil && (!strings.Contains(err.Error(), settings.PprofAddr) || !strings.Contains(err.Error(), "127.0.0.1")) {
				t.Errorf("settings.Parse(%q): %v: the error names neither the variable nor a value that works", v, err)
			}
		}
	}
	for _, v := range []string{"127.0.0.1", "6060", "http://127.0.0.1:6060"} {
		if _, err := parse(v); err == nil {
			t.Errorf("settings.Parse(%q) accepted a value that is not host:port", v)
		}
	}
	if got, err := parse(""); got != "" || err != nil {
		t.Errorf("settings.Parse(\"\") = %q, %v; want off", got, err)
	}
	if _, err := ConfigFromEnv(env(map[string]string{settings.PprofAddr: "0.0.0.0:6060"})); err == nil || !strings.Contains(err.Error(), settings.PprofAddr) {
		t.Errorf("ConfigFromEnv with a non-loopback profiling address: %v", err)
	}
}

// TestPprofOffByDefault: without the setting no profile is served, on the
// service's port or elsewhere.
func TestPprofOffByDefault(t *testing.T) {
	s := start(t, testConfig(t, nil))
	if code := status(t, s.url+"/debug/pprof/"); code != http.StatusNotFound {
		t.Errorf("GET /debug/pprof/ on the service's port: %d, want 404", code)
	}
	if n := len(ct.With(s.log.Lines(t), "msg", "profiling endpoint serving")); n != 0 {
		t.Errorf("%d profiling endpoints started without %s", n, settings.PprofAddr)
	}
}

// TestPprofServesOnItsOwnLoopbackListener: with the setting, the profiles
// are served on that address and still not on the service's port, and the
// endpoint stops with the consumer.
func TestPprofServesOnItsOwnLoopbackListener(t *testing.T) {
	cfg := testConfig(t, map[string]string{settings.PprofAddr: "127.0.0.1:0"})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	log := &ct.Log{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready, profiles, done := make(chan struct{}), make(chan string, 1), make(chan error, 1)
	go func() {
		done <- Run(ctx, cfg, logging.New(log, slog.LevelInfo), Options{Listener: ln, Ready: func(string) { close(ready) },
			PprofReady: func(addr string) { profiles <- addr }})
	}()
	var addr string
	select {
	case addr = <-profiles:
	case err := <-done:
		t.Fatalf("Run: %v", err)
	}
	<-ready
	if code := status(t, "http://"+ln.Addr().String()+"/debug/pprof/"); code != http.StatusNotFound {
		t.Errorf("GET /debug/pprof/ on the service's port: %d, want 404", code)
	}
	resp, err := http.Get("http://" + addr + "/debug/pprof/heap?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "TotalAlloc") {
		t.Errorf("GET /debug/pprof/heap?debug=1 on %s: %d\n%.300s", addr, resp.StatusCode, body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the consumer did not stop")
	}
	if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		t.Errorf("the profiling endpoint %s still accepts after the consumer stopped", addr)
	}
}

func status(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}
