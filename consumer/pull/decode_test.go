package pull

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"cloud.google.com/go/pubsub/v2"

	"github.com/eventpipe/eventpipe/consumer/envelope"
)

// FuzzPullDecodeMatchesPush states that a message is read alike however it
// arrives: a pulled message and the push envelope Pub/Sub would send for
// it are both accepted, as the same message, or both refused with a
// *envelope.FieldError naming the same field. Seeds: payloads of each JSON
// kind and malformed ones, ids at and beyond the limit, attributes and
// ordering keys, and publish times including the zero time (which the
// push path refused and the pull path let through as "no publish time").
func FuzzPullDecodeMatchesPush(f *testing.F) {
	payloads := []string{`{"service":"api","status":"ok"}`, `{}`, `[]`, `"x"`, `null`, ``, `{"a":1}{"b":2}`, "{\"a\":\"\xff\"}", `{"a":`}
	ids := []string{"1", "Ab/Cd É", strings.Repeat("m", 1024), strings.Repeat("m", 1025)}
	times := []int64{time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC).UnixNano(), 0, time.Time{}.UnixNano(), -1}
	for i, p := range payloads {
		f.Add([]byte(p), ids[i%len(ids)], times[i%len(times)], "k", "v", "")
	}
	for i, id := range ids {
		f.Add([]byte(payloads[0]), id, times[0], "", "", strings.Repeat("o", 1020+2*i))
	}
	f.Add([]byte(payloads[0]), "1", time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).Unix(), "", "", "")
	// Two faults at once: both paths name the one DecodePush checks first.
	f.Add([]byte(payloads[0]), ids[3], time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).Unix(), "", "", "")
	f.Add([]byte(payloads[6]), ids[3], times[0], "", "", strings.Repeat("o", 1025))
	f.Fuzz(func(t *testing.T, data []byte, id string, publishNanos int64, attrKey, attrValue, orderingKey string) {
		if id == "" || !utf8.ValidString(id+attrKey+attrValue+orderingKey) {
			return // Pub/Sub gives every message an id; JSON carries only UTF-8 text unchanged
		}
		published := time.Unix(0, publishNanos).UTC()
		if publishNanos == time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).Unix() {
			published = time.Time{} // the zero time, which Unix nanoseconds cannot reach
		}
		attrs := map[string]string{}
		if attrKey != "" {
			attrs[attrKey] = attrValue
		}
		const sub = "projects/p/subscriptions/s"
		pulled := message(sub, &pubsub.Message{ID: id, Data: data, Attributes: attrs, PublishTime: published, OrderingKey: orderingKey})
		pullErr := envelope.DecodePulled(&pulled)

		msg := map[string]any{"data": base64.StdEncoding.EncodeToString(data), "messageId": id,
			"publishTime": published.Format(time.RFC3339Nano), "attributes": attrs}
		if orderingKey != "" {
			msg["orderingKey"] = orderingKey
		}
		body, err := json.Marshal(map[string]any{"message": msg, "subscription": sub})
		if err != nil {
			t.Fatal(err)
		}
		pushed, pushErr := envelope.DecodePush(body)
		var pushFE, pullFE *envelope.FieldError
		switch {
		case (pushErr == nil) != (pullErr == nil):
			t.Fatalf("push: %v; pull: %v", pushErr, pullErr)
		case pushErr != nil:
			if !errors.As(pushErr, &pushFE) || !errors.As(pullErr, &pullFE) || pushFE.Path != pullFE.Path {
				t.Fatalf("refused for different fields: push %v; pull %v", pushErr, pullErr)
			}
			return
		}
		if pushed.ID != pulled.ID || !pushed.PublishTime.Equal(pulled.PublishTime) || pushed.OrderingKey != pulled.OrderingKey ||
			!reflect.DeepEqual(pushed.Attributes, pulled.Attributes) || string(pushed.Data) != string(pulled.Data) ||
			!reflect.DeepEqual(pushed.Payload.Keys(), pulled.Payload.Keys()) {
			t.Fatalf("read differently:\npush %+v\npull %+v", pushed, pulled)
		}
	})
}
