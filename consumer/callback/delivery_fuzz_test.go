package callback

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/consumer/logging"
	ct "github.com/eventpipe/eventpipe/internal/testing/consumertest"
)

// FuzzCallbackDelivery holds the callback handler to the consumer's
// promises for any body and Idempotency-Key header, each sent twice (a
// job's retry): every call is logged on exactly one line with one of the
// five outcomes; applied and duplicate answer 200, poison a 4xx, retry a
// 5xx; a poison line's error says how to fix it, within the log field's
// bound; a keyed callback that was applied is a duplicate the second time
// and leaves the run document as the first left it. Seeds: the validation
// callback with each field missing, null, mistyped, empty or a kilobyte
// long, and with keys in the body, the header, both and neither.
func FuzzCallbackDelivery(f *testing.F) {
	base := map[string]any{"run_id": "run-1", "callback_id": "cb-1", "status": "completed", "result_uri": "gs://out/run-1.json"}
	odd := []any{nil, "", 7, 1.5, true, []any{"a"}, map[string]any{"a": "b"}, strings.Repeat("k", 1024), strings.Repeat("k", 1025),
		"Ab/Cd É ☃", "run-404", "x\u0000y"}
	for _, k := range slices.Sorted(maps.Keys(base)) {
		for _, v := range append(odd, deleted{}) {
			b := maps.Clone(base)
			if _, del := v.(deleted); del {
				delete(b, k)
			} else {
				b[k] = v
			}
			body, err := json.Marshal(b)
			if err != nil {
				f.Fatal(err)
			}
			for _, hdr := range []string{"", "cb-1", "cb-2", strings.Repeat("h", 1024)} {
				f.Add(string(body), hdr)
			}
		}
	}
	for _, body := range []string{"", "null", "[]", `{"run_id":`, `{"run_id":"run-1","status":"completed","status":"failed"}`, "{\"run_id\":\"run-1\",\"status\":\"\xff\"}"} {
		f.Add(body, "cb-1")
	}
	f.Fuzz(func(t *testing.T, body, key string) {
		if strings.ContainsFunc(key, func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }) {
			return // not a value an HTTP header can carry
		}
		f := newFixture(t)
		var hdr map[string]string
		if key != "" {
			hdr = map[string]string{"Idempotency-Key": key}
		}
		status, line := f.delivery(t, body, hdr)
		run, _ := ct.Get(t, f.st, runKey)
		again, line2 := f.delivery(t, body, hdr)
		if line["outcome"] == "applied" && line["unprotected"] != true {
			if line2["outcome"] != "duplicate" || again != status {
				t.Fatalf("a keyed callback applied, then %v %d (first %d)", line2["outcome"], again, status)
			}
			if after, _ := ct.Get(t, f.st, runKey); !reflect.DeepEqual(after.Fields, run.Fields) {
				t.Fatalf("the retry changed the run:\n%v\n%v", run.Fields, after.Fields)
			}
		}
	})
}

// deleted marks a seed field to remove.
type deleted struct{}

// delivery posts one callback and checks its one outcome line against the
// status; it returns both.
func (f *fixture) delivery(t *testing.T, body string, hdr map[string]string) (int, map[string]any) {
	t.Helper()
	before := len(f.log.Lines(t))
	a := f.post(t, "/callbacks/validation", body, hdr)
	var lines []map[string]any
	for _, l := range f.log.Lines(t)[before:] {
		if _, ok := l["outcome"]; ok {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 {
		t.Fatalf("%d lines with an outcome for one callback, want 1: %v", len(lines), lines)
	}
	line := lines[0]
	if line["http_status"] != float64(a.status) {
		t.Fatalf("logged http_status %v, answered %d", line["http_status"], a.status)
	}
	switch line["outcome"] {
	case "applied", "duplicate":
		if a.status != 200 {
			t.Fatalf("%v answered %d", line["outcome"], a.status)
		}
	case "poison":
		if a.status < 400 || a.status >= 500 {
			t.Fatalf("poison answered %d", a.status)
		}
		errText, _ := line["error"].(string)
		if errText != logging.Bound(errText) || !strings.Contains(errText, "fix:") {
			t.Fatalf("poison error does not say how to fix it: %q", errText)
		}
	case "retry":
		if a.status < 500 {
			t.Fatalf("retry answered %d", a.status)
		}
	default:
		t.Fatalf("outcome %v is none of the five", line["outcome"])
	}
	return a.status, line
}
