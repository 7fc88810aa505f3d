package storetest

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/consumer/engine"
	"github.com/eventpipe/eventpipe/consumer/keys"
	"github.com/eventpipe/eventpipe/consumer/store"
)

// v1Payloads are payloads with the fingerprints the code before RFC 8785 computed for
// them (frozen, as consumer/keys/testdata/v1_fingerprints.json keeps them): one whose
// canonical form is the same in both, and two whose forms differ (a fraction below 1e-4
// and an integer beyond 2^53; an exponent, a fraction above 1e6 and keys beyond U+FFFF).
var v1Payloads = []struct{ payload, v1 string }{
	{`{"eventId":"e3","service":"svc","status":"degraded"}`, "sha256:4k26ufayfzf4dxkol3bc2jemccpzlvm54765djc3abppwuv6c2tq"},
	{`{"ratio":0.0000012,"big":12345678901234567890}`, "sha256:yeirix2mip6zde7ghhb3e2mbxkkkadkbe2avzyyckxjft5qehpxa"},
	{`[1e-7,1234567.5,1.5e300,100.0]`, "sha256:lncbqkn346eqekqrdh2xrlcx7bv6y22ex4bjhp7gp3v4ydu6ea7a"},
	{`{"😀":1,"\ue000":2,"é":3,"e":4}`, "sha256:ew527rfp2g2w4mwoicvy24bh7kpdm2q77gjiupaol72mnwawz3ua"},
}

// recordsFromBeforeRFC8785: records written before fingerprints became RFC 8785 (the same
// records with the v1 fingerprint) still recognise their event: a duplicate delivered
// across the upgrade is a duplicate, under a producer's event id (state document and
// dedupe marker) and under a message id (a document created per event, whose id carries
// the fingerprint's hash), and a reused event id is still poison.
func recordsFromBeforeRFC8785(t *testing.T, e *env) {
	eng, coll, created := e.engine(), e.collection("ops_services"), e.collection("findings")
	for i, p := range v1Payloads {
		// Under the producer's event id, with a dedupe marker.
		ev := engine.Event{MessageID: fmt.Sprintf("m%d", i), EventID: fmt.Sprintf("ev%d", i), Payload: []byte(p.payload)}
		w := engine.Write{Collection: coll, ID: fmt.Sprintf("agg%d", i), Fields: map[string]any{"n": int64(i)}, DedupeMarker: true}
		if r, err := eng.Materialize(context.Background(), ev, w); err != nil || r.Outcome != engine.Applied {
			t.Fatalf("%s: %+v, %v; want applied", p.payload, r, err)
		}
		e.setFingerprint(store.Key{Collection: coll, ID: "prod__" + w.ID}, p.v1)
		e.setFingerprint(store.Key{Collection: e.prefix + "dedupe", ID: "prod__e-" + ev.EventID}, p.v1)
		ev.MessageID += "-again"
		if r, err := eng.Materialize(context.Background(), ev, w); err != nil || r.Outcome != engine.Duplicate || r.Warning != "" {
			t.Errorf("%s redelivered over its v1 records: %+v, %v; want a duplicate", p.payload, r, err)
		}
		reused := ev
		reused.Payload = []byte(`{"other":` + p.payload + `}`)
		if _, err := eng.Materialize(context.Background(), reused, w); errType(err) != engine.TypePoison {
			t.Errorf("%s: event id reused with another payload over v1 records: err = %v, want poison", p.payload, err)
		}

		// Under the message id: one document per event, named by the event key and
		// the fingerprint's hash, which must be the one v1 named it by.
		ev = engine.Event{MessageID: fmt.Sprintf("mc%d", i), Payload: []byte(p.payload)}
		cw := engine.Write{Collection: created, Mode: engine.ModeCreate, Fields: map[string]any{"n": int64(i)}}
		if r, err := eng.Materialize(context.Background(), ev, cw); err != nil || r.Outcome != engine.Applied {
			t.Fatalf("%s created: %+v, %v; want applied", p.payload, r, err)
		}
		id := keys.JoinID("prod", "m-"+ev.MessageID+"-"+p.v1[len(p.v1)-keys.LogicalKeyLen:][:16])
		e.setFingerprint(store.Key{Collection: created, ID: id}, p.v1)
		if r, err := eng.Materialize(context.Background(), ev, cw); err != nil || r.Outcome != engine.Duplicate {
			t.Errorf("%s created again over its v1 document: %+v, %v; want a duplicate", p.payload, r, err)
		}
	}
}

// setFingerprint rewrites the fingerprint of the record at key (a document's engine
// metadata, or a dedupe marker) to fp, as the code that wrote fp would have stored it.
func (e *env) setFingerprint(key store.Key, fp string) {
	e.t.Helper()
	err := e.st.RunTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		doc, err := tx.Get(ctx, key)
		if err != nil {
			return err
		}
		fields := maps.Clone(doc.Fields)
		if meta, ok := fields[engine.MetaField].(map[string]any); ok {
			meta = maps.Clone(meta)
			if !strings.HasPrefix(fmt.Sprint(meta["fingerprint"]), "sha256:") {
				return fmt.Errorf("no fingerprint in %v", meta)
			}
			meta["fingerprint"] = fp
			fields[engine.MetaField] = meta
		} else if _, ok := fields["fingerprint"]; ok {
			fields["fingerprint"] = fp
		} else {
			return fmt.Errorf("no fingerprint in %v", fields)
		}
		doc.Fields = fields
		return tx.Set(ctx, key, doc)
	})
	if err != nil {
		e.t.Fatalf("writing the v1 fingerprint of %s: %v", key, err)
	}
}
