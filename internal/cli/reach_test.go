package cli

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/internal/testing/proctest"
)

// TestReachThroughProxy: a host behind a proxy is checked at the proxy and reported
// with it; a listening port passes.
func TestReachThroughProxy(t *testing.T) {
	proxy := proctest.ClosedAddr(t)
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
	if err := CheckReachable(context.Background(), []string{ln.Addr().String()}, time.Second); err != nil {
		t.Errorf("a listening port: %v", err)
	}
}
