package main

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/consumer/logfields"
	"github.com/eventpipe/eventpipe/consumer/logging"
	"github.com/eventpipe/eventpipe/internal/testing/otlptest"
	"github.com/eventpipe/eventpipe/internal/testing/proctest"
)

// TestTracedBinaryExportsOnSIGTERM runs the binary with tracing turned on by
// the standard variables, pushes one message whose publisher traced it, and
// stops the binary with SIGTERM: the delivery's span reaches the OTLP
// endpoint (flushed at shutdown, well before the batch would be due) as a
// child of the publisher's span, and the message's log line names it.
func TestTracedBinaryExportsOnSIGTERM(t *testing.T) {
	recv := otlptest.Start(t)
	p := proctest.Start(t, consumerBinary(t), proctest.Options{
		Base: []string{"PATH=" + os.Getenv("PATH")},
		Env: []string{"EVENTPIPE_STORE=bbolt://" + filepath.Join(t.TempDir(), "consumer.db"),
			"OTEL_EXPORTER_OTLP_ENDPOINT=" + recv.URL, "OTEL_BSP_SCHEDULE_DELAY=600000", TraceProjectEnv + "=demo"},
	})
	const traceID, publishSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	body := `{"message":{"data":"eyJzZXJ2aWNlIjoiY2hlY2tvdXQiLCJzdGF0dXMiOiJoZWFsdGh5In0=","messageId":"2001","publishTime":"2026-01-02T03:04:06Z",` +
		`"attributes":{"googclient_traceparent":"00-` + traceID + `-` + publishSpan + `-01"}},"subscription":"projects/demo/subscriptions/system-events"}`
	resp, err := http.Post(p.URL+"/pubsub/push", "application/json", bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("push answered %d", resp.StatusCode)
	}
	p.Stop(t)

	var delivery *otlptest.Span
	for _, s := range recv.Spans() {
		if s.Name == "process system-events" {
			delivery = &s
		}
	}
	if delivery == nil || delivery.TraceID != traceID || delivery.ParentID != publishSpan || delivery.Service != "eventpipe-consumer" {
		t.Fatalf("exported spans %+v, want process system-events of eventpipe-consumer under the publisher's span", recv.Spans())
	}
	var line map[string]any
	for _, l := range jsonLines(t, p) {
		if l[logfields.MessageID] == "2001" {
			line = l
		}
	}
	want := map[string]any{logfields.Trace: "projects/demo/traces/" + traceID, logfields.SpanID: delivery.SpanID, logfields.TraceSampled: true}
	for k, v := range want {
		if line[k] != v {
			t.Errorf("log line %s = %v, want %v (line %v)", k, line[k], v, line)
		}
	}
}

// TestTracedBinaryBoundsErrorTexts runs the binary with tracing on and
// pushes poison messages whose "no route matches" errors would name
// megabyte-long keys: the exported delivery spans carry no string longer
// than a log field (the status and the exception event name the error,
// bounded), so a span waiting for export does not keep the error in full.
func TestTracedBinaryBoundsErrorTexts(t *testing.T) {
	recv := otlptest.Start(t)
	p := proctest.Start(t, consumerBinary(t), proctest.Options{
		Base: []string{"PATH=" + os.Getenv("PATH")},
		Env: []string{"EVENTPIPE_STORE=bbolt://" + filepath.Join(t.TempDir(), "consumer.db"),
			"OTEL_EXPORTER_OTLP_ENDPOINT=" + recv.URL, "OTEL_BSP_SCHEDULE_DELAY=600000"},
	})
	const messages = 3
	for i := range messages {
		key := strings.Repeat("k", 1<<20)
		data := fmt.Sprintf(`{"%d-%s":1,"%d-2-%s":2}`, i, key, i, key)
		body := fmt.Sprintf(`{"message":{"data":%q,"messageId":"%d","publishTime":"2026-01-02T03:04:06Z"},"subscription":"projects/demo/subscriptions/system-events"}`,
			b64(data), 7000+i)
		resp, err := http.Post(p.URL+"/pubsub/push", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("poison push answered %d, want 200 (acked: no dead-letter policy)", resp.StatusCode)
		}
	}
	p.Stop(t)
	var poison int
	for _, s := range recv.Spans() {
		if s.LongestString > logging.MaxFieldLen {
			t.Errorf("span %q carries a %d-byte string, over the %d-byte bound (status %.80q…)", s.Name, s.LongestString, logging.MaxFieldLen, s.Status)
		}
		if strings.Contains(s.Status, "no route matches") {
			poison++
		}
	}
	if poison != messages {
		t.Fatalf("%d exported spans name the unroutable error, want %d", poison, messages)
	}
}

// TestTraceExportFailureIsALogLine runs the binary with tracing on and an OTLP endpoint
// nothing listens on: the spans it cannot export are reported as a JSON WARNING line, like
// everything else the consumer prints, never as the OpenTelemetry SDK's own plain-text
// line on stderr (which Cloud Logging would take for an unstructured error).
func TestTraceExportFailureIsALogLine(t *testing.T) {
	p := startWith(t, "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:"+fmt.Sprint(proctest.FreePort(t)), TraceProjectEnv+"=demo")
	body := `{"message":{"data":"eyJzZXJ2aWNlIjoiY2hlY2tvdXQiLCJzdGF0dXMiOiJoZWFsdGh5In0=","messageId":"3001","publishTime":"2026-01-02T03:04:06Z"},"subscription":"projects/demo/subscriptions/system-events"}`
	resp, err := http.Post(p.URL+"/pubsub/push", "application/json", bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	p.Stop(t)
	warned := false
	for _, l := range jsonLines(t, p) { // fails on a line that is not JSON
		if l["severity"] == "WARNING" && strings.Contains(fmt.Sprint(l[logfields.Error]), "connection refused") {
			warned = true
		}
	}
	if !warned {
		t.Errorf("no WARNING line says the spans could not be exported: %q", p.Raw())
	}
}
