package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/memstore"
)

// recorder is a testing.TB that keeps Errorf's messages and runs its
// cleanups when told.
type recorder struct {
	testing.TB
	errs     []string
	cleanups []func()
}

func (r *recorder) Helper()                   {}
func (r *recorder) Cleanup(f func())          { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Errorf(f string, a ...any) { r.errs = append(r.errs, fmt.Sprintf(f, a...)) }

func (r *recorder) end() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

// TestGuardCatchesAChangedGivenDocument: a document given to the store
// (store.CreateOwned, store.SetOwned) that its giver changes afterwards,
// inside the transaction or after it, fails the test, at every depth; one
// left alone does not.
func TestGuardCatchesAChangedGivenDocument(t *testing.T) {
	ctx := context.Background()
	writes := map[string]func(context.Context, store.Tx, store.Key, store.Document) error{
		"CreateOwned": store.CreateOwned, "SetOwned": store.SetOwned,
	}
	changes := map[string]func(map[string]any){
		"none":  nil,
		"top":   func(f map[string]any) { f["n"] = int64(2) },
		"added": func(f map[string]any) { f["new"] = "x" },
		"deep":  func(f map[string]any) { f["m"].(map[string]any)["l"].([]any)[0] = "changed" },
	}
	for wname, write := range writes {
		for cname, change := range changes {
			for _, inside := range []bool{true, false} {
				name := fmt.Sprintf("%s/%s/inside=%v", wname, cname, inside)
				rec := &recorder{TB: t}
				st := Guard(rec, memstore.New())
				fields := map[string]any{"n": int64(1), "m": map[string]any{"l": []any{"a"}}}
				key := store.Key{Collection: "c", ID: "d"}
				err := st.RunTx(ctx, func(ctx context.Context, tx store.Tx) error {
					if err := write(ctx, tx, key, store.Document{Fields: fields}); err != nil {
						return err
					}
					if inside && change != nil {
						change(fields)
					}
					return nil
				})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if !inside && change != nil {
					change(fields)
				}
				rec.end()
				switch {
				case change == nil && len(rec.errs) > 0:
					t.Errorf("%s: unchanged document reported: %v", name, rec.errs)
				case change != nil && (len(rec.errs) != 1 || !strings.Contains(rec.errs[0], "given to the store")):
					t.Errorf("%s: want one report of the change, got %v", name, rec.errs)
				}
			}
		}
	}
}
