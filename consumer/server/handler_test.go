package server

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/consumer/logging"
	ct "github.com/eventpipe/eventpipe/internal/testing/consumertest"
)

// handlerRoutes has one route that names the handler (no action URL).
const handlerRoutes = `{"routes":[{"name":"orders","match":{"fields":["orderId"]},"mode":"lease",
  "fields":{"orderId":{"from":["orderId"],"type":"string"}},"action":{}}]}`

// TestHandlerRouteNeedsHandlerURL: a route naming the handler without
// EVENTPIPE_HANDLER_URL stops start-up, naming the variable.
func TestHandlerRouteNeedsHandlerURL(t *testing.T) {
	cfg := testConfig(t, map[string]string{"EVENTPIPE_ROUTES": handlerRoutes})
	err := Run(t.Context(), cfg, logging.New(&ct.Log{}, slog.LevelInfo), Options{})
	if err == nil || !strings.Contains(err.Error(), "EVENTPIPE_HANDLER_URL") || !strings.Contains(err.Error(), "route orders") {
		t.Fatalf("want an error naming the route and EVENTPIPE_HANDLER_URL, got %v", err)
	}
}

// TestGatewayMounted: with a handler, other paths reach it; the consumer's
// own paths stay the consumer's.
func TestGatewayMounted(t *testing.T) {
	h := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "handler saw "+r.Method+" "+r.URL.Path)
	}))
	defer h.Close()
	s := start(t, testConfig(t, map[string]string{"EVENTPIPE_ROUTES": handlerRoutes, "EVENTPIPE_HANDLER_URL": h.URL}))
	for _, c := range []struct{ method, path, want string }{
		{http.MethodGet, "/orders/1", "handler saw GET /orders/1"},
		{http.MethodPost, "/orders", "handler saw POST /orders"},
		{http.MethodGet, HealthPath, `{"status":"ok"}`},
		{http.MethodPost, HealthPath, "not proxied"},
		{http.MethodGet, "/eventpipe/deliveries/orders", "not proxied"},
		{http.MethodGet, "/callbacks/validation", "not proxied"},
	} {
		req, _ := http.NewRequest(c.method, s.url+c.path, strings.NewReader("{}"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got := strings.TrimSpace(string(b))
		if c.want == "not proxied" {
			if strings.HasPrefix(got, "handler saw") || resp.StatusCode < 400 {
				t.Errorf("%s %s: %d %q, want the consumer's own 4xx", c.method, c.path, resp.StatusCode, got)
			}
		} else if got != c.want {
			t.Errorf("%s %s: %q, want %q", c.method, c.path, got, c.want)
		}
	}
}
