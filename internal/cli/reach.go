package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"
)

// ReachTimeout bounds the check that an endpoint accepts connections. Without it an
// unreachable endpoint surfaces only when the first call's deadline passes (about a
// minute), as a misleading permission or "context deadline exceeded" error.
const ReachTimeout = 5 * time.Second

// EmulatorEnv points the Google Pub/Sub clients at an emulator (the client libraries
// read it themselves).
const EmulatorEnv = "PUBSUB_EMULATOR_HOST"

// googleEndpoints are the APIs a live audit calls (audit/live.Dial).
var googleEndpoints = []string{
	"pubsub.googleapis.com:443", "run.googleapis.com:443", "monitoring.googleapis.com:443",
	"firestore.googleapis.com:443", "cloudresourcemanager.googleapis.com:443",
}

// PubsubEndpoints are where the Pub/Sub clients will connect: the emulator when
// PUBSUB_EMULATOR_HOST is set, else Google's APIs (all of them when all is set, only
// Pub/Sub's otherwise).
func PubsubEndpoints(all bool) []string {
	if host := os.Getenv(EmulatorEnv); host != "" {
		return []string{host}
	}
	if all {
		return googleEndpoints
	}
	return googleEndpoints[:1]
}

// CheckReachable opens (and closes) a TCP connection to every host, through the HTTPS
// proxy the environment names for it as gRPC does, all at once and each within
// timeout. Its error names each host that could not be reached and what to do.
func CheckReachable(ctx context.Context, hosts []string, timeout time.Duration) error {
	return checkReachableVia(ctx, hosts, timeout, http.ProxyFromEnvironment)
}

// checkReachableVia is CheckReachable with the proxy of each host given by proxyFor.
func checkReachableVia(ctx context.Context, hosts []string, timeout time.Duration, proxyFor func(*http.Request) (*url.URL, error)) error {
	errs := make([]error, len(hosts))
	var wg sync.WaitGroup
	for i, host := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = reach(ctx, host, timeout, proxyFor)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// reach is CheckReachable for one host.
func reach(ctx context.Context, host string, timeout time.Duration, proxyFor func(*http.Request) (*url.URL, error)) error {
	target, via := host, ""
	if proxy, err := proxyFor(&http.Request{URL: &url.URL{Scheme: "https", Host: host}}); err == nil && proxy != nil {
		target, via = proxy.Host, " through the proxy "+proxy.Host
		if proxy.Port() == "" {
			target = net.JoinHostPort(proxy.Hostname(), map[bool]string{true: "443", false: "80"}[proxy.Scheme == "https"])
		}
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(dctx, "tcp", target)
	if err == nil {
		return conn.Close()
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	hint := "check the network, or set HTTPS_PROXY if Google APIs are reached through a proxy"
	if emu := os.Getenv(EmulatorEnv); emu != "" && emu == host {
		hint = "is the emulator running there? `eventpipe dev --serve` prints the address to use; unset " +
			EmulatorEnv + " to use Google Cloud"
	}
	if errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "i/o timeout") {
		err = fmt.Errorf("no answer within %s", timeout)
	}
	return fmt.Errorf("cannot reach %s%s: %w; %s", host, via, err, hint)
}
