package storetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/store"
)

func (s *suite) cases() []testCase {
	return []testCase{
		{name: "StoreRoundTrip", run: storeRoundTrip},
		{name: "StoreInt64", int64: true, run: storeInt64},
		{name: "StoreCreateExisting", run: storeCreateExisting},
		{name: "StoreRollback", run: storeRollback},
		{name: "StoreReadAfterWrite", run: storeReadAfterWrite},
		{name: "StoreGetAll", run: storeGetAll},
		{name: "StoreDocumentsNotShared", run: storeDocumentsNotShared},
		{name: "StoreOwnedWrites", run: storeOwnedWrites},
		{name: "StoreConcurrentCreate", isolation: true, run: storeConcurrentCreate},
		{name: "StoreConcurrentIncrement", isolation: true, run: storeConcurrentIncrement},
		{name: "StoreWriteSkew", isolation: true, run: storeWriteSkew},
		{name: "DuplicateDelivery", run: duplicateDelivery},
		{name: "OperationCounts", run: operationCounts},
		{name: "OperationCountsHotDocument", run: operationCountsHotDocument},
		{name: "ConcurrentSameMessage", isolation: true, run: concurrentSameMessage},
		{name: "ShuffledSequences", run: shuffledSequences},
		{name: "ConcurrentShuffledDeliveries", isolation: true, run: concurrentShuffled},
		{name: "DeterministicTies", run: deterministicTies},
		{name: "DedupeMarker", run: dedupeMarker},
		{name: "CreateMode", run: createMode},
		{name: "FingerprintMismatch", run: fingerprintMismatch},
		{name: "RecordsFromBeforeRFC8785", run: recordsFromBeforeRFC8785},
		{name: "ExactEventIDs", run: exactEventIDs},
		{name: "DerivedKeyCollision", run: derivedKeyCollision},
		{name: "EventTimeSkew", run: eventTimeSkew},
		{name: "NoMessageFreezesADocument", run: noMessageFreezesADocument},
		{name: "PoisonKeepsWholeMessage", run: poisonKeepsWholeMessage},
		{name: "LeaseLifecycle", run: leaseLifecycle},
		{name: "LeaseTakeoverAndFencing", run: leaseTakeoverAndFencing},
		{name: "LeaseRetryThenPoison", run: leaseRetryThenPoison},
		{name: "LeaseAggregateSequence", run: leaseAggregateSequence},
		{name: "ConcurrentClaims", isolation: true, run: concurrentClaims},
		{name: "ConcurrentReplays", isolation: true, run: concurrentReplays},
		{name: "RejectedIsRemembered", run: rejectedIsRemembered},
		{name: "OneStatusVocabulary", run: oneStatusVocabulary},
		{name: "LengthPerRequest", run: lengthPerRequest},
		{name: "Receipts", run: receipts},
		{name: "ReceiptHolderDies", run: receiptHolderDies},
		{name: "ReceiptResult", run: receiptResult},
		{name: "ReceiptsRace", isolation: true, run: receiptsRace},
		{name: "ExpiredRecordsAbsent", run: expiredRecordsAbsent},
		{name: "ExpireAtOnEveryRecord", run: expireAtOnEveryRecord},
		{name: "IDNormalisation", run: idNormalisation},
		{name: "WorkerCrashes", run: workerCrashes},
		{name: "ProjectionCrashes", run: projectionCrashes},
		{name: "StoreOutage", run: storeOutage},
	}
}

func runTx(t *testing.T, st store.Store, fn func(ctx context.Context, tx store.Tx) error) error {
	t.Helper()
	return st.RunTx(context.Background(), fn)
}

func storeRoundTrip(t *testing.T, e *env) {
	key := store.Key{Collection: e.collection("docs"), ID: "a"}
	exp := time.Date(2026, 1, 15, 10, 0, 0, 123456000, time.UTC)
	want := map[string]any{
		"s": "text ✓", "i": int64(-42), "big": int64(1)<<53 - 1, "f": 2.5, "b": true, "n": nil,
		"t":    time.Date(2026, 1, 8, 10, 0, 0, 987654000, time.UTC),
		"list": []any{"x", int64(1), 1.5},
		"m":    map[string]any{"k": "v", "deep": map[string]any{"z": int64(0)}},
	}
	if err := runTx(t, e.st, func(ctx context.Context, tx store.Tx) error {
		if _, err := tx.Get(ctx, key); !isNotFound(err) {
			t.Errorf("Get of a missing document: err = %v, want ErrNotFound", err)
		}
		return tx.Create(ctx, key, store.Document{Fields: want, ExpireAt: exp})
	}); err != nil {
		t.Fatalf("create: %v", err)
	}
	got := e.get(key)
	if got == nil {
		t.Fatal("document missing after Create")
	}
	if !reflect.DeepEqual(got.Fields, want) {
		t.Errorf("fields round trip:\n got %#v\nwant %#v", got.Fields, want)
	}
	if !got.ExpireAt.Equal(exp) {
		t.Errorf("ExpireAt = %v, want %v", got.ExpireAt, exp)
	}
	if err := runTx(t, e.st, func(ctx context.Context, tx store.Tx) error {
		return tx.Set(ctx, key, store.Document{Fields: map[string]any{"v": int64(2)}})
	}); err != nil {
		t.Fatalf("set: %v", err)
	}
	got = e.get(key)
	switch {
	case got == nil || got.Fields["v"] != int64(2):
		t.Errorf("after Set: %+v, want v=2", got)
	case e.h.SetMerges != "":
		t.Logf("not checking that Set replaced the document: %s", e.h.SetMerges)
	case len(got.Fields) != 1 || !got.ExpireAt.IsZero():
		t.Errorf("after Set: %+v, want only v=2 and no expiry (Set replaces)", got)
	}
	if err := runTx(t, e.st, func(ctx context.Context, tx store.Tx) error {
		if err := tx.Delete(ctx, key); err != nil {
			return err
		}
		return tx.Delete(ctx, store.Key{Collection: key.Collection, ID: "never-existed"})
	}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if got := e.get(key); got != nil {
		t.Errorf("document still there after Delete: %+v", got)
	}
}

func storeInt64(t *testing.T, e *env) {
	key := store.Key{Collection: e.collection("docs"), ID: "int64"}
	want := map[string]any{"max": int64(math.MaxInt64), "min": int64(math.MinInt64), "big": int64(1)<<60 + 1}
	if err := runTx(t, e.st, func(ctx context.Context, tx store.Tx) error {
		return tx.Set(ctx, key, store.Document{Fields: want})
	}); err != nil {
		t.Fatalf("set: %v", err)
	}
	if got := e.get(key); got == nil || !reflect.DeepEqual(got.Fields, want) {
		t.Errorf("int64 round trip: got %+v, want %v", got, want)
	}
}

func storeCreateExisting(t *testing.T, e *env) {
	key := store.Key{Collection: e.collection("docs"), ID: "dup"}
	create := func(v int64) error {
		return runTx(t, e.st, func(ctx context.Context, tx store.Tx) error {
			return tx.Create(ctx, key, store.Document{Fields: map[string]any{"v": v}})
		})
	}
	if err := create(1); err != nil {
		t.Fatalf("first create: %v", err)
	}
	if err := create(2); !isAlreadyExists(err) {
		t.Fatalf("second create: err = %v, want ErrAlreadyExists", err)
	}
	if got := e.get(key); got == nil || got.Fields["v"] != int64(1) {
		t.Errorf("document after failed create = %+v, want v=1", got)
	}
}

func storeRollback(t *testing.T, e *env) {
	key := store.Key{Collection: e.collection("docs"), ID: "rb"}
	boom := errors.New("boom")
	err := runTx(t, e.st, func(ctx context.Context, tx store.Tx) error {
		if err := tx.Set(ctx, key, store.Document{Fields: map[string]any{"v": int64(1)}}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("RunTx err = %v, want the function's error", err)
	}
	if got := e.get(key); got != nil {
		t.Errorf("write of a failed transaction was kept: %+v", got)
	}
}

func storeReadAfterWrite(t *testing.T, e *env) {
	a := store.Key{Collection: e.collection("docs"), ID: "a"}
	b := store.Key{Collection: e.collection("docs"), ID: "b"}
	err := runTx(t, e.st, func(ctx context.Context, tx store.Tx) error {
		if err := tx.Set(ctx, a, store.Document{Fields: map[string]any{}}); err != nil {
			return err
		}
		_, err := tx.Get(ctx, b)
		return err
	})
	if err == nil || isNotFound(err) {
		t.Fatalf("Get after Set in one transaction: err = %v, want a read-after-write error (Firestore rejects that order)", err)
	}
	if got := e.get(a); got != nil {
		t.Errorf("the failed transaction's write was kept")
	}
}

// storeGetAll reads several documents at once (the driver's batch read, or
// one read each): one result per key in order, nil for a missing one, and
// like Get it may not follow a write.
func storeGetAll(t *testing.T, e *env) {
	a := store.Key{Collection: e.collection("docs"), ID: "all-a"}
	b := store.Key{Collection: e.collection("docs"), ID: "all-b"}
	missing := store.Key{Collection: e.collection("docs"), ID: "all-missing"}
	other := store.Key{Collection: e.collection("other"), ID: "all-a"}
	if err := runTx(t, e.st, func(ctx context.Context, tx store.Tx) error {
		if err := tx.Set(ctx, a, store.Document{Fields: map[string]any{"v": "a"}}); err != nil {
			return err
		}
		return tx.Set(ctx, b, store.Document{Fields: map[string]any{"v": "b"}})
	}); err != nil {
		t.Fatal(err)
	}
	var got []string
	err := runTx(t, e.st, func(ctx context.Context, tx store.Tx) error {
		got = nil
		docs, err := store.GetAll(ctx, tx, []store.Key{b, missing, a, other})
		if err != nil {
			return err
		}
		for _, d := range docs {
			if d == nil {
				got = append(got, "<nil>")
				continue
			}
			v, _ := d.Fields["v"].(string)
			got = append(got, v)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("GetAll: %v", err)
	}
	if want := []string{"b", "<nil>", "a", "<nil>"}; !reflect.DeepEqual(got, want) {
		t.Errorf("GetAll(b, missing, a, a in another collection) = %q, want %q", got, want)
	}
	err = runTx(t, e.st, func(ctx context.Context, tx store.Tx) error {
		if err := tx.Set(ctx, missing, store.Document{Fields: map[string]any{}}); err != nil {
			return err
		}
		_, err := store.GetAll(ctx, tx, []store.Key{a})
		return err
	})
	if err == nil || isNotFound(err) {
		t.Fatalf("GetAll after Set in one transaction: err = %v, want a read-after-write error", err)
	}
}

func storeConcurrentCreate(t *testing.T, e *env) {
	key := store.Key{Collection: e.collection("docs"), ID: "race"}
	var wins, exists, other countErrs
	e.parallel(func(i int) {
		err := runTx(t, e.st, func(ctx context.Context, tx store.Tx) error {
			return tx.Create(ctx, key, store.Document{Fields: map[string]any{"winner": int64(i)}})
		})
		switch {
		case err == nil:
			wins.add(nil)
		case isAlreadyExists(err):
			exists.add(nil)
		default:
			other.add(err)
		}
	})
	if wins.n != 1 || exists.n != e.n-1 {
		t.Fatalf("%d concurrent creates: %d succeeded, %d already-exists, other errors %v; want exactly 1 success", e.n, wins.n, exists.n, other.errs)
	}
}

func storeConcurrentIncrement(t *testing.T, e *env) {
	key := store.Key{Collection: e.collection("docs"), ID: "counter"}
	var failed countErrs
	e.parallel(func(int) {
		err := runTx(t, e.st, func(ctx context.Context, tx store.Tx) error {
			var n int64
			d, err := tx.Get(ctx, key)
			switch {
			case err == nil:
				n, _ = d.Fields["n"].(int64)
			case !isNotFound(err):
				return err
			}
			return tx.Set(ctx, key, store.Document{Fields: map[string]any{"n": n + 1}})
		})
		if err != nil {
			failed.add(err)
		}
	})
	if len(failed.errs) > 0 {
		t.Fatalf("increments failed: %v", failed.errs)
	}
	if got := e.get(key); got == nil || got.Fields["n"] != int64(e.n) {
		t.Fatalf("after %d concurrent read-modify-write increments the counter is %+v; lost updates mean the transactions are not isolated", e.n, got)
	}
}

// storeWriteSkew is the write skew snapshot isolation allows: every
// transaction reads two documents and, while both are on, turns one of them
// off (half turn off a, half b). Run one after another, only the first
// finds both on, so exactly one document ends off.
func storeWriteSkew(t *testing.T, e *env) {
	a := store.Key{Collection: e.collection("docs"), ID: "skew-a"}
	b := store.Key{Collection: e.collection("docs"), ID: "skew-b"}
	for _, k := range []store.Key{a, b} {
		if err := runTx(t, e.st, func(ctx context.Context, tx store.Tx) error {
			return tx.Set(ctx, k, store.Document{Fields: map[string]any{"on": true}})
		}); err != nil {
			t.Fatal(err)
		}
	}
	var failed countErrs
	e.parallel(func(i int) {
		err := runTx(t, e.st, func(ctx context.Context, tx store.Tx) error {
			da, err := tx.Get(ctx, a)
			if err != nil {
				return err
			}
			db, err := tx.Get(ctx, b)
			if err != nil {
				return err
			}
			if da.Fields["on"] != true || db.Fields["on"] != true {
				return nil
			}
			off := []store.Key{a, b}[i%2]
			return tx.Set(ctx, off, store.Document{Fields: map[string]any{"on": false}})
		})
		if err != nil {
			failed.add(err)
		}
	})
	if len(failed.errs) > 0 {
		t.Fatalf("transactions failed: %v", failed.errs)
	}
	on := 0
	for _, k := range []store.Key{a, b} {
		if d := e.get(k); d != nil && d.Fields["on"] == true {
			on++
		}
	}
	if on != 1 {
		t.Fatalf("%d of 2 documents still on after %d concurrent read-both-then-turn-one-off transactions; want exactly 1 (write skew: the transactions are not serialisable)", on, e.n)
	}
}

// storeDocumentsNotShared checks the driver's side of store.Tx's contract
// on documents: Set neither changes nor keeps the caller's document (its
// values not in the value model are converted in a copy), and a document
// read stays as it was read when the store later replaces or deletes it
// (the caller's side, that what Get returns is not changed, every case
// checks through Guard).
func storeDocumentsNotShared(t *testing.T, e *env) {
	key := store.Key{Collection: e.collection("docs"), ID: "shared"}
	given := map[string]any{"n": 1, "tags": []string{"a"}, "m": map[string]any{"x": "a", "l": []any{int64(1)}}}
	if err := runTx(t, e.st, func(ctx context.Context, tx store.Tx) error {
		return tx.Set(ctx, key, store.Document{Fields: given})
	}); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"n": int64(1), "tags": []any{"a"}, "m": map[string]any{"x": "a", "l": []any{int64(1)}}}
	if n, ok := given["n"].(int); !ok || n != 1 {
		t.Errorf("Set changed the caller's document: n = %#v, want int 1", given["n"])
	}
	given["n"], given["m"].(map[string]any)["x"], given["m"].(map[string]any)["l"].([]any)[0] = 2, "changed", int64(2)
	read := e.get(key)
	if read == nil || !reflect.DeepEqual(read.Fields, want) {
		t.Fatalf("after the caller changed the document it wrote, the store holds %+v, want %v", read, want)
	}
	if err := runTx(t, e.st, func(ctx context.Context, tx store.Tx) error {
		return tx.Set(ctx, key, store.Document{Fields: map[string]any{"n": int64(3), "m": map[string]any{"x": "b", "l": []any{int64(3)}}}})
	}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(read.Fields, want) {
		t.Errorf("a document read changed when the store replaced it: %v, want %v", read.Fields, want)
	}
	if err := runTx(t, e.st, func(ctx context.Context, tx store.Tx) error { return tx.Delete(ctx, key) }); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(read.Fields, want) {
		t.Errorf("a document read changed when the store deleted it: %v, want %v", read.Fields, want)
	}
}

// storeOwnedWrites: a document given to the store (store.CreateOwned and
// SetOwned, through the driver's store.OwnedWriter when it has one) is
// stored as Create and Set store it, converted to the value model, and
// the driver does not modify what it was given; Create's rule holds; a
// document read is not changed by a later owned write. Every kind of
// value, in and out of the value model, alone and nested, is written both
// ways.
func storeOwnedWrites(t *testing.T, e *env) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("X", 3600))
	// A document's expiry is kept to the microsecond (PostgreSQL's
	// timestamptz), its fields' times as they are.
	expireAt := at.Truncate(time.Microsecond)
	kinds := map[string]func() any{
		"int":      func() any { return 7 },
		"int64":    func() any { return int64(7) },
		"float":    func() any { return 2.5 },
		"string":   func() any { return "s" },
		"bool":     func() any { return true },
		"nil":      func() any { return nil },
		"time":     func() any { return at },
		"timeUTC":  func() any { return at.UTC() },
		"strings":  func() any { return []string{"a"} },
		"list":     func() any { return []any{int64(1), "b"} },
		"map":      func() any { return map[string]any{"x": int64(1), "l": []any{"y"}} },
		"strmap":   func() any { return map[string]string{"k": "v"} },
		"deepint":  func() any { return map[string]any{"x": []any{1}} },
		"deeptime": func() any { return map[string]any{"t": at} },
	}
	i := 0
	for name, v := range kinds {
		for _, nested := range []bool{false, true} {
			for _, set := range []bool{false, true} {
				i++
				fields := func() map[string]any {
					if nested {
						return map[string]any{"outer": map[string]any{name: v()}, "n": int64(i)}
					}
					return map[string]any{name: v(), "n": int64(i)}
				}
				doc := store.Document{Fields: fields(), ExpireAt: expireAt}
				want, err := store.CopyDocument(store.Document{Fields: fields(), ExpireAt: expireAt})
				if err != nil {
					t.Fatal(err)
				}
				key := store.Key{Collection: e.collection("owned"), ID: fmt.Sprintf("d%d", i)}
				write := store.CreateOwned
				if set {
					write = store.SetOwned
				}
				if err := runTx(t, e.st, func(ctx context.Context, tx store.Tx) error {
					return write(ctx, tx, key, doc)
				}); err != nil {
					t.Fatalf("%s (nested %v, set %v): %v", name, nested, set, err)
				}
				if !reflect.DeepEqual(doc.Fields, fields()) {
					t.Errorf("%s (nested %v, set %v): the driver changed the document given: %#v", name, nested, set, doc.Fields)
				}
				read := e.get(key)
				if read == nil || !reflect.DeepEqual(read.Fields, want.Fields) || !read.ExpireAt.Equal(expireAt) {
					t.Fatalf("%s (nested %v, set %v): stored %+v, want %+v", name, nested, set, read, want)
				}
				err = runTx(t, e.st, func(ctx context.Context, tx store.Tx) error {
					return store.CreateOwned(ctx, tx, key, store.Document{Fields: map[string]any{"n": int64(0)}})
				})
				if !errors.Is(err, store.ErrAlreadyExists) {
					t.Fatalf("%s: CreateOwned over an existing document: %v, want ErrAlreadyExists", name, err)
				}
				if err := runTx(t, e.st, func(ctx context.Context, tx store.Tx) error {
					return store.SetOwned(ctx, tx, key, store.Document{Fields: map[string]any{"n": int64(-1)}})
				}); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(read.Fields, want.Fields) {
					t.Errorf("%s: a document read changed when an owned write replaced it: %v", name, read.Fields)
				}
				if got := e.get(key); got == nil || got.Fields["n"] != int64(-1) {
					t.Errorf("%s: SetOwned did not replace the document: %+v", name, got)
				}
			}
		}
	}
}
