package engine_test

import (
	"context"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/engine"
	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/memstore"
)

// mapSource is an engine.FieldSource over a flat map, counting builds.
type mapSource struct {
	fields map[string]any
	builds int
}

func (s *mapSource) HasField(name string) bool { _, ok := s.fields[name]; return ok }

func (s *mapSource) Values() []any {
	out := make([]any, 0, len(s.fields))
	for _, v := range s.fields {
		out = append(out, v)
	}
	return out
}

func (s *mapSource) NewFields() map[string]any {
	s.builds++
	out := make(map[string]any, len(s.fields))
	for k, v := range s.fields {
		out[k] = store.CloneValue(v)
	}
	return out
}

// TestMaterializeSourceMatchesFields writes the same message once with
// Write.Fields and once with Write.Source: the outcomes, errors and stored
// documents must be identical, and a duplicate must not build the fields.
func TestMaterializeSourceMatchesFields(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name    string
		fields  map[string]any
		errType engine.ErrorType // "" for applied
		// lazy: every value is in the value model, so a duplicate builds
		// nothing (others are built, and converted, up front).
		lazy bool
	}{
		{"value model", map[string]any{"status": "up", "n": int64(3), "at": at, "src": map[string]any{"topic": "t"}}, "", true},
		{"converted", map[string]any{"status": "up", "n": 3, "tags": []string{"a", "b"}}, "", false},
		{"reserved meta", map[string]any{engine.MetaField: "x"}, engine.TypeConfiguration, true},
		{"reserved expiry", map[string]any{store.ExpireAtField: at}, engine.TypeConfiguration, true},
		{"unstorable", map[string]any{"bad": math.NaN()}, engine.TypePoison, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			docs := make([]store.Document, 2)
			for i := range docs {
				st := &committedWrites{inner: memstore.New()}
				eng, err := engine.New(engine.Config{Store: st, Env: "prod", Now: func() time.Time { return at }})
				if err != nil {
					t.Fatal(err)
				}
				src := &mapSource{fields: tc.fields}
				w := engine.Write{Collection: "things", ID: "a", EventTime: at, DedupeMarker: true}
				if i == 0 {
					w.Fields = tc.fields
				} else {
					w.Source = src
				}
				ev := engine.Event{MessageID: "m1", PublishTime: at, Payload: []byte(`{"a":1}`)}
				res, err := eng.Materialize(ctx, ev, w)
				if tc.errType != "" {
					var ee *engine.Error
					if !errors.As(err, &ee) || ee.Type != tc.errType {
						t.Fatalf("write %d: %v; want a %s error", i, err, tc.errType)
					}
					if n := st.writes.Load(); n != 0 {
						t.Fatalf("write %d: %d writes committed after an error", i, n)
					}
					continue
				}
				if err != nil || res.Outcome != engine.Applied {
					t.Fatalf("write %d: %+v, %v; want applied", i, res, err)
				}
				built := src.builds
				if res, err = eng.Materialize(ctx, ev, w); err != nil || res.Outcome != engine.Duplicate {
					t.Fatalf("redelivery %d: %+v, %v; want duplicate", i, res, err)
				}
				if tc.lazy && src.builds != built {
					t.Errorf("redelivery %d built the fields (%d builds, %d before)", i, src.builds, built)
				}
				err = st.RunTx(ctx, func(ctx context.Context, tx store.Tx) error {
					docs[i], err = tx.Get(ctx, store.Key{Collection: "things", ID: "prod__a"})
					return err
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			if !reflect.DeepEqual(docs[0], docs[1]) {
				t.Errorf("stored documents differ:\nFields: %v\nSource: %v", docs[0], docs[1])
			}
			if tc.errType == "" && !strings.Contains(docs[1].Fields["status"].(string), "up") {
				t.Errorf("source document lacks its fields: %v", docs[1])
			}
		})
	}
}
