package envelope

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// pushBody builds a push envelope around payload; tweak edits the message
// object before encoding.
func pushBody(t testing.TB, data string, tweak func(msg, env map[string]any)) []byte {
	t.Helper()
	msg := map[string]any{
		"data":        data,
		"attributes":  map[string]any{"origin": "test"},
		"messageId":   "123",
		"publishTime": "2026-01-02T03:04:05.678Z",
	}
	env := map[string]any{"message": msg, "subscription": "projects/p/subscriptions/s"}
	if tweak != nil {
		tweak(msg, env)
	}
	b, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestDecodePushValid(t *testing.T) {
	payload := `{"service":"api","n":12345678901234567890}`
	tests := []struct {
		name  string
		body  []byte
		check func(t *testing.T, m Message)
	}{
		{"standard base64", pushBody(t, b64(payload), nil), func(t *testing.T, m Message) {
			if m.ID != "123" || m.Subscription != "projects/p/subscriptions/s" || m.Attributes["origin"] != "test" {
				t.Fatalf("%+v", m)
			}
			if !m.PublishTime.Equal(time.Date(2026, 1, 2, 3, 4, 5, 678e6, time.UTC)) {
				t.Fatalf("publish time %v", m.PublishTime)
			}
			if n, _ := m.Payload.Get("n"); n != json.Number("12345678901234567890") {
				t.Fatalf("number not kept exactly: %v", n)
			}
			if m.DeliveryAttempt > 0 {
				t.Fatal("no deliveryAttempt was sent")
			}
		}},
		{"url-safe unpadded base64", pushBody(t, base64.RawURLEncoding.EncodeToString([]byte(`{"k":"??>>"}`)), nil), func(t *testing.T, m Message) {
			if k, _ := m.Payload.Get("k"); k != "??>>" {
				t.Fatalf("%v", k)
			}
		}},
		{"snake_case ids", pushBody(t, b64(payload), func(msg, _ map[string]any) {
			delete(msg, "messageId")
			delete(msg, "publishTime")
			msg["message_id"] = "777"
			msg["publish_time"] = "2026-01-02T03:04:05Z"
		}), func(t *testing.T, m Message) {
			if m.ID != "777" {
				t.Fatalf("%+v", m)
			}
		}},
		{"both spellings agreeing", pushBody(t, b64(payload), func(msg, _ map[string]any) { msg["message_id"] = "123" }), func(t *testing.T, m Message) {
			if m.ID != "123" {
				t.Fatal(m.ID)
			}
		}},
		{"delivery attempt", pushBody(t, b64(payload), func(_, env map[string]any) { env["deliveryAttempt"] = 3 }), func(t *testing.T, m Message) {
			if m.DeliveryAttempt != 3 {
				t.Fatal(m.DeliveryAttempt)
			}
		}},
		{"no attributes", pushBody(t, b64(payload), func(msg, _ map[string]any) { delete(msg, "attributes") }), func(t *testing.T, m Message) {
			if m.Attributes == nil {
				t.Fatal("attributes must never be nil")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := DecodePush(tt.body)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, m)
		})
	}
}

func TestDecodePushInvalid(t *testing.T) {
	good := b64(`{"a":1}`)
	tests := []struct {
		name  string
		body  []byte
		field string
	}{
		{"not json", []byte("hello"), "(body)"},
		{"array body", []byte("[]"), "(body)"},
		{"no message", []byte(`{"subscription":"projects/p/subscriptions/s"}`), "message"},
		{"message not object", []byte(`{"message":"x","subscription":"projects/p/subscriptions/s"}`), "message"},
		{"no data", pushBody(t, good, func(msg, _ map[string]any) { delete(msg, "data") }), "message.data"},
		{"data not string", pushBody(t, good, func(msg, _ map[string]any) { msg["data"] = 5 }), "message.data"},
		{"bad base64", pushBody(t, "%%%", nil), "message.data"},
		{"mixed alphabets", pushBody(t, "ab+_", nil), "message.data"},
		{"data not json", pushBody(t, b64("not json"), nil), "message.data"},
		{"data is array", pushBody(t, b64(`[1,2]`), nil), "message.data"},
		{"data trailing", pushBody(t, b64(`{"a":1}{"b":2}`), nil), "message.data"},
		{"no message id", pushBody(t, good, func(msg, _ map[string]any) { delete(msg, "messageId") }), "message.messageId"},
		{"empty message id", pushBody(t, good, func(msg, _ map[string]any) { msg["messageId"] = "" }), "message.messageId"},
		{"numeric message id", pushBody(t, good, func(msg, _ map[string]any) { msg["messageId"] = 5 }), "message.messageId"},
		{"ids disagree", pushBody(t, good, func(msg, _ map[string]any) { msg["message_id"] = "999" }), "message.messageId"},
		{"no publish time", pushBody(t, good, func(msg, _ map[string]any) { delete(msg, "publishTime") }), "message.publishTime"},
		{"bad publish time", pushBody(t, good, func(msg, _ map[string]any) { msg["publishTime"] = "yesterday" }), "message.publishTime"},
		{"attribute not string", pushBody(t, good, func(msg, _ map[string]any) { msg["attributes"] = map[string]any{"n": 1} }), "message.attributes.n"},
		{"attribute null", pushBody(t, good, func(msg, _ map[string]any) { msg["attributes"] = map[string]any{"n": nil} }), "message.attributes.n"},
		{"first bad attribute by name", pushBody(t, good, func(msg, _ map[string]any) {
			msg["attributes"] = map[string]any{"z": 1, "b": true, "a": "ok", "c": nil}
		}), "message.attributes.b"},
		{"zero publish time", pushBody(t, good, func(msg, _ map[string]any) { msg["publishTime"] = "0001-01-01T00:00:00Z" }), "message.publishTime"},
		{"zero publish time with offset", pushBody(t, good, func(msg, _ map[string]any) { msg["publishTime"] = "0001-01-01T01:00:00+01:00" }), "message.publishTime"},
		{"attributes not object", pushBody(t, good, func(msg, _ map[string]any) { msg["attributes"] = []int{1} }), "message.attributes"},
		{"no subscription", pushBody(t, good, func(_, env map[string]any) { delete(env, "subscription") }), "subscription"},
		{"short subscription", pushBody(t, good, func(_, env map[string]any) { env["subscription"] = "s" }), "subscription"},
		{"zero delivery attempt", pushBody(t, good, func(_, env map[string]any) { env["deliveryAttempt"] = 0 }), "deliveryAttempt"},
		{"string delivery attempt", pushBody(t, good, func(_, env map[string]any) { env["deliveryAttempt"] = "2" }), "deliveryAttempt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodePush(tt.body)
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("want *FieldError, got %v", err)
			}
			if fe.Path != tt.field {
				t.Fatalf("field = %q, want %q (%v)", fe.Path, tt.field, err)
			}
			if fe.Fix == "" || !strings.Contains(err.Error(), "fix:") {
				t.Fatalf("error does not say how to fix it: %v", err)
			}
		})
	}
}

// FuzzDecodePush checks that the decoder never panics, that every failure is
// a *FieldError, and that every accepted envelope survives a round trip.
// Seed corpus: testdata/fuzz/FuzzDecodePush plus the bodies below.
func FuzzDecodePush(f *testing.F) {
	f.Add(pushBody(f, b64(`{"service":"api","status":"ok"}`), nil))
	f.Add(pushBody(f, base64.RawURLEncoding.EncodeToString([]byte(`{"a":"??"}`)), func(_, env map[string]any) { env["deliveryAttempt"] = 2 }))
	f.Add([]byte(`{"message":{"data":"e30=","message_id":"1","publish_time":"2026-01-01T00:00:00Z"},"subscription":"projects/p/subscriptions/s"}`))
	f.Add([]byte(`{}`))
	// Broke it: a zero publish time was accepted (the engine reads it as none).
	f.Add([]byte(`{"message":{"data":"e30=","messageId":"1","publishTime":"0001-01-01T00:00:00Z"},"subscription":"projects/p/subscriptions/s"}`))
	f.Add([]byte(`{"message":{"data":"e30=","messageId":"1","publishTime":"2026-01-01t00:00:00.5z","attributes":{"a":null}},"subscription":"projects/p/subscriptions/s"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		asSent := bytes.Clone(body)
		m, err := DecodePush(body)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Path == "" || fe.Fix == "" {
				t.Fatalf("error without field and fix: %v", err)
			}
			// Refused before its data was decoded (in place), the body is as
			// sent, for Peek; refused for its payload, the message has its data.
			if m.Data == nil && !bytes.Equal(body, asSent) {
				t.Fatalf("refused (%v) with no data, but the body changed", err)
			}
			if m.Data != nil && (fe.Path != "message.data" || m.ID == "" || m.Subscription == "") {
				t.Fatalf("refused (%v) with its data, but not for its payload, or without its ids: %+v", err, m)
			}
			return
		}
		// Every attribute accepted was sent as a string (none was null).
		var sent struct {
			Message struct{ Attributes map[string]any }
		}
		if json.Unmarshal(asSent, &sent) == nil { // body holds the data decoded in place
			for k, v := range sent.Message.Attributes {
				if _, ok := v.(string); !ok {
					t.Fatalf("accepted attribute %q = %v, not a string", k, v)
				}
			}
		}
		if m.ID == "" || m.Payload.data == nil || m.Attributes == nil || m.Subscription == "" || m.PublishTime.IsZero() {
			t.Fatalf("accepted an incomplete message: %+v", m)
		}
		again := map[string]any{
			"message": map[string]any{
				"data": base64.StdEncoding.EncodeToString(m.Data), "attributes": m.Attributes,
				"messageId": m.ID, "publishTime": m.PublishTime.Format(time.RFC3339Nano),
			},
			"subscription": m.Subscription,
		}
		if m.DeliveryAttempt > 0 {
			again["deliveryAttempt"] = m.DeliveryAttempt
		}
		b, err := json.Marshal(again)
		if err != nil {
			t.Fatal(err)
		}
		m2, err := DecodePush(b)
		if err != nil {
			t.Fatalf("re-encoded envelope rejected: %v", err)
		}
		m.OrderingKey = ""
		if !reflect.DeepEqual(m.Payload, m2.Payload) || m.ID != m2.ID || !m.PublishTime.Equal(m2.PublishTime) ||
			!reflect.DeepEqual(m.Attributes, m2.Attributes) || m.DeliveryAttempt != m2.DeliveryAttempt {
			t.Fatalf("round trip changed the message:\n%+v\n%+v", m, m2)
		}
	})
}

func TestPeek(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		id, sub string
		attempt int
	}{
		{"bad data keeps ids", `{"message":{"data":"%%","messageId":"9"},"subscription":"projects/p/subscriptions/s","deliveryAttempt":4}`, "9", "projects/p/subscriptions/s", 4},
		{"snake id", `{"message":{"message_id":"8"}}`, "8", "", 0},
		{"mistyped fields", `{"message":{"messageId":5},"subscription":7,"deliveryAttempt":"x"}`, "", "", 0},
		{"not json", `<html>`, "", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := Peek([]byte(tt.body))
			if m.ID != tt.id || m.Subscription != tt.sub || m.DeliveryAttempt != tt.attempt || string(m.Data) != tt.body {
				t.Fatalf("%+v", m)
			}
		})
	}
}
