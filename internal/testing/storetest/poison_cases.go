package storetest

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/consumer/engine"
	"github.com/eventpipe/eventpipe/consumer/limits"
	"github.com/eventpipe/eventpipe/consumer/store"
)

// firestoreDocumentLimit is Firestore's largest document, which every
// record the engine writes must fit whatever the store.
const firestoreDocumentLimit = 1 << 20

// poisonKeepsWholeMessage records poison messages of every size up to
// Pub/Sub's largest (text with multi-byte characters across chunk
// boundaries, and binary data with NUL bytes) and reads each back whole,
// with its attributes and ordering key; no document written is larger
// than Firestore allows.
func poisonKeepsWholeMessage(t *testing.T, e *env) {
	eng := e.engine()
	ctx := context.Background()
	text := strings.Repeat("ab\u00e9\u4e16\u00e9 \"quoted\" {json}\n", 130_000) // about 3 MB, runes of 1-3 bytes
	binary := bytes.Repeat([]byte{0, 1, 2, 0xff, 'x', 0xc3}, limits.MaxMessageBytes/6)
	attrs := map[string]string{"origin": "billing", "trace": strings.Repeat("t", 1024)}
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"small", []byte(`{"not":"routable"}`)},
		{"text", []byte(text)},
		{"binary, 10 MB", binary},
	} {
		ev := engine.Event{MessageID: "msg-" + strings.ReplaceAll(tc.name, " ", ""), PublishTime: t0(), Payload: tc.data,
			Attributes: attrs, OrderingKey: "customer-7"}
		path, err := eng.RecordPoison(ctx, ev, engine.PoisonRecord{Reason: "unroutable", ErrorType: engine.TypePoison, Source: "projects/p/subscriptions/s"})
		if err != nil {
			t.Fatalf("%s: record %d bytes: %v", tc.name, len(tc.data), err)
		}
		// A redelivery records it again, in the same place.
		if again, err := eng.RecordPoison(ctx, ev, engine.PoisonRecord{Reason: "unroutable"}); err != nil || again != path {
			t.Errorf("%s: recording again: %s, %v; want %s", tc.name, again, err, path)
		}
		m, err := eng.ReadPoison(ctx, path)
		if err != nil {
			t.Fatalf("%s: read back: %v", tc.name, err)
		}
		if !bytes.Equal(m.Data, tc.data) || m.OrderingKey != "customer-7" || m.MessageID != ev.MessageID ||
			len(m.Attributes) != 2 || m.Attributes["trace"] != attrs["trace"] {
			t.Errorf("%s: read back %d bytes (want %d), attributes %d, ordering key %q, message id %q", tc.name,
				len(m.Data), len(tc.data), len(m.Attributes), m.OrderingKey, m.MessageID)
		}
		chunks, _ := m.Fields["dataChunks"].(int64)
		if tc.name != "small" && chunks < 2 {
			t.Errorf("%s: %d chunks; want the data cut into several", tc.name, chunks)
		}
		_, id, _ := strings.Cut(path, "/")
		for i := int64(0); i < chunks; i++ {
			key := store.Key{Collection: e.prefix + "poison", ID: id}
			if i > 0 {
				key.ID += "__p" + leftPad(i)
			}
			d := e.get(key)
			if d == nil {
				t.Fatalf("%s: no document %s", tc.name, key)
			}
			raw, err := store.EncodeJSON(*d)
			if err != nil || len(raw) > firestoreDocumentLimit {
				t.Errorf("%s: %s is %d bytes, more than a Firestore document holds (%v)", tc.name, key, len(raw), err)
			}
			if want := e.clock.Now().Add(engine.DefaultPoisonTTL); !d.ExpireAt.Equal(want) {
				t.Errorf("%s: %s expires %v, want %v", tc.name, key, d.ExpireAt, want)
			}
		}
	}
	// Two messages with one event id and different data: two records.
	a := engine.Event{MessageID: "m-a", EventID: "shared", Payload: []byte(`{"v":1}`)}
	b := engine.Event{MessageID: "m-b", EventID: "shared", Payload: []byte(`{"v":2}`)}
	pa, errA := eng.RecordPoison(ctx, a, engine.PoisonRecord{Reason: "x"})
	pb, errB := eng.RecordPoison(ctx, b, engine.PoisonRecord{Reason: "x"})
	if errA != nil || errB != nil || pa == pb {
		t.Errorf("two poison messages of one event id: %s, %v and %s, %v; want two records", pa, errA, pb, errB)
	}
	// Attributes no record can hold: an error, so the message is retried,
	// not acknowledged and lost.
	huge := map[string]string{}
	for i := range 300 {
		huge[strings.Repeat("k", 200)+leftPad(int64(i))] = strings.Repeat("v", 1024)
	}
	_, err := eng.RecordPoison(ctx, engine.Event{MessageID: "m-huge", Payload: []byte("{}"), Attributes: huge}, engine.PoisonRecord{Reason: "x"})
	if errType(err) != engine.TypeConfiguration {
		t.Errorf("attributes beyond a record: %v, want a configuration error (retry, never drop)", err)
	}
}

func leftPad(i int64) string { return fmt.Sprintf("%04d", i) }
