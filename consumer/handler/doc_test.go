package handler

import (
	"encoding/json"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/envelope"
)

// TestDocDeliveryExample holds the delivery example of docs/handlers.md to
// Delivery: the same fields, and each value of the type Delivery writes.
func TestDocDeliveryExample(t *testing.T) {
	b, err := os.ReadFile("../../docs/handlers.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, found := strings.Cut(string(b), "<!-- handler-delivery-example")
	_, block, _ := strings.Cut(after, "```json\n")
	block, _, closed := strings.Cut(block, "```")
	if !found || !closed {
		t.Fatal("docs/handlers.md lost its delivery example")
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(block), &doc); err != nil {
		t.Fatalf("docs/handlers.md delivery example: %v", err)
	}
	msg := &envelope.Message{ID: "1", Data: []byte(`{"a":1}`), Attributes: map[string]string{"k": "v"}, PublishTime: time.Now(),
		OrderingKey: "o", Subscription: "projects/p/subscriptions/s", DeliveryAttempt: 1}
	real, err := json.Marshal(NewDelivery("k", "r", 1, msg, map[string]any{"f": 1}))
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	if err := json.Unmarshal(real, &want); err != nil {
		t.Fatal(err)
	}
	if got, exp := slices.Sorted(maps.Keys(doc)), slices.Sorted(maps.Keys(want)); !slices.Equal(got, exp) {
		t.Fatalf("docs/handlers.md delivery fields %v, Delivery writes %v", got, exp)
	}
	for k, v := range want {
		if gt, wt := typeName(doc[k]), typeName(v); gt != wt {
			t.Errorf("docs/handlers.md delivery field %s is a %s, Delivery writes a %s", k, gt, wt)
		}
	}
}

func typeName(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case float64:
		return "number"
	case map[string]any:
		return "object"
	default:
		return "other"
	}
}
