package main

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestUnreachableEmulator: replay and audit pointed at an emulator address nothing
// listens on say "cannot reach HOST" and what to do, exit 2, and do so well before the
// minute a first call's deadline would take; replay prints no "replayed 0 of 0".
func TestUnreachableEmulator(t *testing.T) {
	host := closedPort(t)
	t.Setenv(emulatorEnv, host)
	for _, args := range [][]string{
		{"replay", "--subscription", "projects/p/subscriptions/s.dlq-sub", "--topic", "projects/p/topics/t"},
		{"audit", "--project", "eventpipe-dev"},
	} {
		start := time.Now()
		out, _, err := executeLog(t, args...)
		took := time.Since(start)
		if exitCode(err) != 2 || err == nil || !strings.Contains(err.Error(), "cannot reach "+host) || !strings.Contains(err.Error(), "eventpipe dev --serve") {
			t.Errorf("%s: exit %d, %v; want exit 2 naming %s and the fix", args[0], exitCode(err), err, host)
		}
		if took > reachTimeout {
			t.Errorf("%s took %s to report an unreachable emulator", args[0], took)
		}
		if strings.Contains(out, "replayed") {
			t.Errorf("%s printed a result though nothing was reached: %s", args[0], out)
		}
	}
}

// TestReachThroughProxy: a host behind a proxy is checked at the proxy and reported
// with it; a listening port passes.
func TestReachThroughProxy(t *testing.T) {
	proxy := closedPort(t)
	proxyURL := &url.URL{Scheme: "http", Host: proxy}
	err := checkReachableVia(context.Background(), []string{"pubsub.googleapis.com:443"}, time.Second, http.ProxyURL(proxyURL))
	if err == nil || !strings.Contains(err.Error(), "cannot reach pubsub.googleapis.com:443 through the proxy "+proxy) {
		t.Errorf("%v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := checkReachable(context.Background(), []string{ln.Addr().String()}, time.Second); err != nil {
		t.Errorf("a listening port: %v", err)
	}
}
