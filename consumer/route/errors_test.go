package route

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/logging"
)

// TestApplyErrorsNameTheFieldAndAFixThatFits states that every error Apply
// gives a message is a *FieldError naming the route's field, whose fix
// tells the sender what to send where that source is read, and which keeps
// its fix within a log field's bound (logging.Bound) however long the
// value. The table is built from every field type crossed with values of
// every JSON kind, short and megabyte-long, and from every kind of source
// as the first of a required field no source of which is present.
// Broke it: a required "$publishTime" said "send $publishTime in the
// payload"; an integer field said `strconv.ParseInt: parsing "…` with the
// whole value, so a 2 KB value cut the fix off the logged error; "send a
// integer".
func TestApplyErrorsNameTheFieldAndAFixThatFits(t *testing.T) {
	long := strings.Repeat("k", 4096)
	values := []string{`"x"`, `"` + long + `"`, `1.5`, `1e400`, `99999999999999999999`, `1` + strings.Repeat("0", 3000), `true`,
		`{"a":1}`, `[1]`, `"2026-01-02"`, `1767322800000`, `-1`}
	check := func(t *testing.T, err error, field, mustNot string) {
		t.Helper()
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Path != field || fe.Fix == "" {
			t.Fatalf("want a *FieldError for %s with a fix, got %v", field, err)
		}
		bounded := logging.Bound(err.Error())
		if !strings.Contains(bounded, "; fix: "+fe.Fix) {
			t.Fatalf("the fix does not survive the log bound: %q", bounded)
		}
		if mustNot != "" && strings.Contains(fe.Fix, mustNot) {
			t.Fatalf("fix %q says %q", fe.Fix, mustNot)
		}
		if strings.Contains(err.Error(), "a integer") || strings.Contains(err.Error(), "strconv.") {
			t.Fatalf("error reads badly: %v", err)
		}
	}
	for _, typ := range []string{"string", "timestamp", "integer", "number", "boolean"} {
		table, err := Parse([]byte(fmt.Sprintf(`{"routes":[{"name":"r","match":{"fields":["id"]},"mode":"latest-state",
			"target":{"collection":"c","id":"id"},"fields":{"id":{"from":["id"],"type":"string","required":true},
			"at":{"from":["at"],"type":"timestamp"},"v":{"from":["value"],"type":%q}},"ordering":{"eventTime":"at"}}]}`, typ)))
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range values {
			payload := `{"id":"a","value":` + v + `}`
			if !json.Valid([]byte(payload)) {
				t.Fatalf("bad test payload %s", payload)
			}
			_, err := table.pubsub[0].Apply(msg(t, payload), "prod")
			if err != nil {
				t.Run(typ+"/"+v[:min(len(v), 12)], func(t *testing.T) { check(t, err, "v", "") })
			}
		}
	}
	for _, src := range append([]string{"payload.path", "$attributes.k"}, specialSources...) {
		if src == "$env" {
			continue // always set
		}
		table, err := Parse([]byte(fmt.Sprintf(`{"routes":[{"name":"r","match":{"fields":["id"]},"mode":"latest-state",
			"target":{"collection":"c","id":"id"},"fields":{"id":{"from":["id"],"type":"string","required":true},
			"at":{"from":["at"],"type":"timestamp"},"v":{"from":[%q],"type":"any","required":true}},"ordering":{"eventTime":"at"}}]}`, src)))
		if err != nil {
			t.Fatal(err)
		}
		m := msg(t, `{"id":"a"}`)
		m.ID, m.Subscription, m.PublishTime = "", "", time.Time{} // none of the sources present
		_, err = table.pubsub[0].Apply(m, "prod")
		t.Run(src, func(t *testing.T) {
			mustNot := ""
			if strings.HasPrefix(src, "$") {
				mustNot = "in the payload"
			}
			check(t, err, "v", mustNot)
		})
	}
}
