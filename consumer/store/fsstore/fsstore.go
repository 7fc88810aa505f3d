// Package fsstore is the Firestore store driver (URL
// "firestore://PROJECT/DATABASE"), on cloud.google.com/go/firestore:
// transactions (Get takes a pessimistic lock; RunTransaction retries on
// ABORTED), Create with its exists=false precondition (so deduping needs no
// prior read), and Document.ExpireAt stored as the timestamp field "expireAt"
// that a Firestore TTL policy deletes on.
//
// Errors keep their gRPC code name ("UNAVAILABLE", "PERMISSION_DENIED", …).
// The client reads FIRESTORE_EMULATOR_HOST, so the same driver runs against an
// emulator.
package fsstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/option"
	"google.golang.org/genproto/googleapis/rpc/code"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/eventpipe/eventpipe/consumer/store"
)

// MaxAttempts is how many times a transaction is tried when Firestore aborts
// it for contention.
const MaxAttempts = 10

// DefaultDatabase is Firestore's default database id.
const DefaultDatabase = "(default)"

// Store is a Firestore-backed store.Store.
type Store struct {
	client *firestore.Client
}

// Open connects to database (DefaultDatabase when empty) of project.
func Open(ctx context.Context, project, database string, opts ...option.ClientOption) (*Store, error) {
	if project == "" {
		return nil, &store.Error{Op: "open firestore", Kind: store.KindConfiguration,
			Err: errors.New("no project: use firestore://PROJECT/DATABASE")}
	}
	if database == "" {
		database = DefaultDatabase
	}
	c, err := firestore.NewClientWithDatabase(ctx, project, database, opts...)
	if err != nil {
		return nil, classify("open firestore", err)
	}
	return &Store{client: c}, nil
}

// Client returns the underlying client.
func (s *Store) Client() *firestore.Client { return s.client }

// RunTx implements store.Store.
func (s *Store) RunTx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	err := s.client.RunTransaction(ctx, func(ctx context.Context, t *firestore.Transaction) error {
		return fn(ctx, &tx{c: s.client, t: t})
	}, firestore.MaxAttempts(MaxAttempts))
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); !ok {
		return err // the function's own error, returned unchanged
	}
	if status.Code(err) == codes.AlreadyExists {
		// A Create's precondition failed at commit.
		return fmt.Errorf("commit: %w: %w", store.ErrAlreadyExists, classify("commit", err))
	}
	return classify("commit", err)
}

// Close closes the client.
func (s *Store) Close() error { return s.client.Close() }

type tx struct {
	c *firestore.Client
	t *firestore.Transaction
}

func (t *tx) ref(key store.Key) *firestore.DocumentRef {
	return t.c.Collection(key.Collection).Doc(key.ID)
}

func (t *tx) Get(ctx context.Context, key store.Key) (store.Document, error) {
	ref := t.ref(key)
	if ref == nil {
		return store.Document{}, invalidKey(key)
	}
	snap, err := t.t.Get(ref)
	if status.Code(err) == codes.NotFound {
		return store.Document{}, fmt.Errorf("get %s: %w", key, store.ErrNotFound)
	}
	if err != nil {
		return store.Document{}, readError("get "+key.String(), err)
	}
	return document(snap), nil
}

// GetAll implements store.MultiGetter with one batch get of every key.
func (t *tx) GetAll(ctx context.Context, keys []store.Key) ([]*store.Document, error) {
	refs := make([]*firestore.DocumentRef, len(keys))
	for i, k := range keys {
		if refs[i] = t.ref(k); refs[i] == nil {
			return nil, invalidKey(k)
		}
	}
	snaps, err := t.t.GetAll(refs)
	if err != nil {
		return nil, readError(fmt.Sprintf("get %d documents", len(keys)), err)
	}
	docs := make([]*store.Document, len(keys))
	for i, snap := range snaps {
		if snap.Exists() {
			d := document(snap)
			docs[i] = &d
		}
	}
	return docs, nil
}

// readError classifies the error of a read.
func readError(op string, err error) error {
	if strings.Contains(err.Error(), "read after write") {
		return fmt.Errorf("%s: %w: %w", op, store.ErrReadAfterWrite, err)
	}
	return classify(op, err)
}

// document converts a snapshot of an existing document.
func document(snap *firestore.DocumentSnapshot) store.Document {
	fields := snap.Data()
	d := store.Document{Fields: fields}
	if exp, ok := fields[store.ExpireAtField].(time.Time); ok {
		d.ExpireAt = exp.UTC()
		delete(fields, store.ExpireAtField)
	}
	for k, v := range fields {
		fields[k] = utc(v)
	}
	return d
}

// utc makes every timestamp UTC, as the other drivers return them.
func utc(v any) any {
	switch x := v.(type) {
	case time.Time:
		return x.UTC()
	case []any:
		for i, e := range x {
			x[i] = utc(e)
		}
	case map[string]any:
		for k, e := range x {
			x[k] = utc(e)
		}
	}
	return v
}

func (t *tx) Create(_ context.Context, key store.Key, doc store.Document) error {
	return t.write(key, doc, func(ref *firestore.DocumentRef, d map[string]any) error { return t.t.Create(ref, d) })
}

func (t *tx) Set(_ context.Context, key store.Key, doc store.Document) error {
	return t.write(key, doc, func(ref *firestore.DocumentRef, d map[string]any) error { return t.t.Set(ref, d) })
}

// write converts doc, its ExpireAt as the field expireAt, and hands it to
// op (Create or Set).
func (t *tx) write(key store.Key, doc store.Document, op func(*firestore.DocumentRef, map[string]any) error) error {
	ref := t.ref(key)
	if ref == nil {
		return invalidKey(key)
	}
	d, err := store.CopyDocument(doc)
	if err != nil {
		return fmt.Errorf("write %s: %w", key, err)
	}
	if _, ok := d.Fields[store.ExpireAtField]; ok {
		return fmt.Errorf("write %s: field %q is reserved for Document.ExpireAt", key, store.ExpireAtField)
	}
	if !doc.ExpireAt.IsZero() {
		d.Fields[store.ExpireAtField] = doc.ExpireAt.UTC()
	}
	return op(ref, d.Fields)
}

func (t *tx) Delete(_ context.Context, key store.Key) error {
	ref := t.ref(key)
	if ref == nil {
		return invalidKey(key)
	}
	return t.t.Delete(ref)
}

func invalidKey(key store.Key) error {
	return &store.Error{Op: "key " + key.String(), Code: "INVALID_ARGUMENT", Kind: store.KindConfiguration,
		Err: errors.New("not a valid Firestore document path: ids must be non-empty and contain no '/'")}
}

// classify wraps a gRPC error as a *store.Error with its code name.
func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		// No gRPC status (a transport failure before one): gRPC's own name for it.
		return &store.Error{Op: op, Code: CodeName(codes.Unknown), Kind: store.KindTransient, Err: err}
	}
	kind := store.KindTransient
	switch st.Code() {
	case codes.PermissionDenied, codes.Unauthenticated, codes.InvalidArgument, codes.NotFound,
		codes.FailedPrecondition, codes.Unimplemented, codes.OutOfRange:
		kind = store.KindConfiguration
	}
	return &store.Error{Op: op, Code: CodeName(st.Code()), Kind: kind, Err: err}
}

// CodeName returns the canonical gRPC name of c, e.g. "DEADLINE_EXCEEDED".
// The names are google.rpc.Code's own.
func CodeName(c codes.Code) string {
	if name, ok := code.Code_name[int32(c)]; ok && int32(c) >= 0 {
		return name
	}
	return fmt.Sprintf("CODE_%d", uint32(c))
}
