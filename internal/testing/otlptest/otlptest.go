// Package otlptest is an OTLP/HTTP trace endpoint for tests: it decodes
// what an OpenTelemetry exporter sends to /v1/traces with the protocol's
// own messages and keeps the spans.
package otlptest

import (
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Span is a received span, flattened.
type Span struct {
	Service  string // the resource's service.name
	Name     string
	TraceID  string // 32 hex digits
	SpanID   string // 16 hex digits
	ParentID string // 16 hex digits, "" for a root span
	Status   string // the status message
	// LongestString is the length in bytes of the longest string the span
	// carries: its status message and its and its events' string attributes.
	LongestString int
}

// Receiver is a running OTLP/HTTP endpoint.
type Receiver struct {
	// URL is the endpoint's base URL, for OTEL_EXPORTER_OTLP_ENDPOINT.
	URL string

	mu    sync.Mutex
	spans []Span
}

// Start serves a Receiver until the test ends.
func Start(t testing.TB) *Receiver {
	r := &Receiver{}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// ServeHTTP implements http.Handler.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	export := &collectortrace.ExportTraceServiceRequest{}
	if err != nil || req.URL.Path != "/v1/traces" || proto.Unmarshal(body, export) != nil {
		http.Error(w, "not an OTLP trace export", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	for _, rs := range export.ResourceSpans {
		service := ""
		for _, a := range rs.GetResource().GetAttributes() {
			if a.Key == "service.name" {
				service = a.Value.GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				longest := len(s.GetStatus().GetMessage())
				attrs := s.Attributes
				for _, e := range s.Events {
					attrs = append(attrs, e.Attributes...)
				}
				for _, a := range attrs {
					longest = max(longest, len(a.GetValue().GetStringValue()))
				}
				r.spans = append(r.spans, Span{Service: service, Name: s.Name, TraceID: hex.EncodeToString(s.TraceId),
					SpanID: hex.EncodeToString(s.SpanId), ParentID: hex.EncodeToString(s.ParentSpanId),
					Status: s.GetStatus().GetMessage(), LongestString: longest})
			}
		}
	}
	r.mu.Unlock()
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// Spans returns the spans received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}
