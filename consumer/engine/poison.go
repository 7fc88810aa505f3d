package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/eventpipe/eventpipe/consumer/keys"
	"github.com/eventpipe/eventpipe/consumer/limits"
	"github.com/eventpipe/eventpipe/consumer/logging"
	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/opcount"
)

// PoisonRecord is the audit record of a message given up on, written to
// {prefix}poison so an operator can see and replay it after the DLQ.
type PoisonRecord struct {
	// Route or Handler say where it failed (either may be empty).
	Route   string
	Handler string
	// Reason is the error text.
	Reason    string
	ErrorType ErrorType
	ErrorCode string
	// Attempts is the delivery or lease attempt count, when known.
	Attempts int64
	// Source is the subscription, lease record or callback it came from.
	Source string
}

// Poison record layout. The message's data is kept whole: as text when it
// is UTF-8 without NUL bytes (readable in a console), else in base64, cut
// into chunks that each fit a Firestore document (1 MiB). The first chunk
// is in the record itself; the others are documents of the same collection
// (so the same TTL policy removes them) named {record id}__p{n}.
const (
	// PoisonChunkBytes bounds one chunk of a record's data, in encoded
	// bytes: with the record's other fields well under Firestore's 1 MiB.
	PoisonChunkBytes = 768 << 10
	// poisonChunksPerTx is how many chunks one transaction writes: a few
	// MiB, below Firestore's 10 MiB per commit.
	poisonChunksPerTx = 4
	// maxPoisonAttributeBytes bounds the attributes the record itself
	// holds (Pub/Sub allows at most 100 of 256 + 1,024 bytes).
	maxPoisonAttributeBytes = 256 << 10
	// Encodings of the data field.
	poisonText   = "text"
	poisonBase64 = "base64"
)

// RecordPoison writes the audit record of a poison message and returns its
// path. There is one record per message (by message id and fingerprint): a
// redelivery of the message rewrites its record. The record keeps the whole
// message: its data (Event.Payload, in chunks beyond PoisonChunkBytes),
// attributes and ordering key. When it cannot (attributes beyond 256 KiB, which Pub/Sub
// never sends) the error is a configuration error: retry the message rather
// than acknowledge what cannot be kept, and give the subscription a
// dead-letter topic, which keeps whole messages.
func (e *Engine) RecordPoison(ctx context.Context, ev Event, p PoisonRecord) (string, error) {
	const op = "record poison"
	id, eventKey, fp := e.poisonID(ev)
	key := store.Key{Collection: e.poison, ID: id}
	if n := attributeBytes(ev.Attributes); n > maxPoisonAttributeBytes {
		return "", newError(TypeConfiguration, op, "the message's attributes take %d bytes, more than a poison record holds (%d): "+
			"it is not acknowledged (fix: give the subscription a dead-letter topic, which keeps whole messages)", n, maxPoisonAttributeBytes)
	}
	now := e.now()
	expire := now.Add(e.cfg.PoisonTTL)
	encoding, chunks := poisonChunks(ev.Payload)
	sum := sha256.Sum256(ev.Payload)
	attrs := make(map[string]any, len(ev.Attributes))
	for k, v := range ev.Attributes {
		attrs[k] = v
	}
	fields := map[string]any{
		"route": p.Route, "handler": p.Handler, "reason": p.Reason, "error_type": string(p.ErrorType),
		"error_code": p.ErrorCode, "attempts": p.Attempts, "source": boundID(p.Source), "eventKey": eventKey,
		metaMessageID: boundID(ev.MessageID), "eventId": boundID(ev.EventID), metaFingerprint: fp, "recordedAt": now,
		"attributes": attrs, "orderingKey": boundID(ev.OrderingKey),
		"dataBytes": int64(len(ev.Payload)), "dataSha256": hex.EncodeToString(sum[:]), "dataEncoding": encoding,
		"dataChunks": int64(len(chunks)), "data": "",
	}
	if !ev.PublishTime.IsZero() {
		fields[metaPublishTime] = ev.PublishTime.UTC()
	}
	var ops opcount.Counts
	// The chunks after the first, a few per transaction, then the record:
	// a record exists only once all its data does.
	for start := 1; start < len(chunks); start += poisonChunksPerTx {
		end := min(start+poisonChunksPerTx, len(chunks))
		err := e.runTx(ctx, &ops, func(ctx context.Context, tx store.Tx) error {
			for i := start; i < end; i++ {
				chunk := store.Document{Fields: map[string]any{"chunkOf": key.String(), "index": int64(i), "data": chunks[i](ev.Payload)},
					ExpireAt: expire}
				if err := tx.Set(ctx, poisonChunkKey(key, i), chunk); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return "", wrap(op, err)
		}
	}
	if len(chunks) > 0 {
		fields["data"] = chunks[0](ev.Payload)
	}
	err := e.runTx(ctx, &ops, func(ctx context.Context, tx store.Tx) error {
		return tx.Set(ctx, key, store.Document{Fields: fields, ExpireAt: expire})
	})
	if err != nil {
		return "", wrap(op, err)
	}
	return key.String(), nil
}

// PoisonDoc returns the path of the poison record RecordPoison writes for
// ev (Fail writes one when a lease's attempts run out).
func (e *Engine) PoisonDoc(ev Event) string {
	id, _, _ := e.poisonID(ev)
	return e.poison + "/" + id
}

// poisonID returns the id of a message's poison record, its event key and
// its fingerprint. The record is per message: named by its message id (or,
// without one, its event key) and part of the SHA-256 of its data, which
// tells apart messages that share an id; a message with neither id is
// named by the whole hash.
func (e *Engine) poisonID(ev Event) (id, eventKey, fp string) {
	eventKey, fp, err := ev.eventKey()
	if err != nil {
		eventKey, fp = "", ""
	}
	rec := eventKey
	if m, err := keys.EscapeID(ev.MessageID); err == nil && len(ev.MessageID) <= limits.MaxIDBytes {
		rec = "m-" + m
	}
	sum := sha256.Sum256(ev.Payload)
	if rec == "" {
		rec = "d-" + hex.EncodeToString(sum[:])
	} else {
		rec += "-" + hex.EncodeToString(sum[:8])
	}
	return keys.JoinID(e.envID, rec), eventKey, fp
}

// poisonChunkKey names chunk i (i >= 1) of the record at key.
func poisonChunkKey(key store.Key, i int) store.Key {
	return store.Key{Collection: key.Collection, ID: keys.JoinID(key.ID, fmt.Sprintf("p%04d", i))}
}

// poisonChunks returns the encoding of data and a function per chunk that
// encodes it. A chunk is encoded only when it is written, so recording a
// large message holds one encoded chunk at a time.
func poisonChunks(data []byte) (string, []func([]byte) string) {
	var chunks []func([]byte) string
	if utf8.Valid(data) && bytes.IndexByte(data, 0) < 0 {
		// Text, cut on rune boundaries so every chunk is valid UTF-8.
		for start := 0; start < len(data); {
			end := min(start+PoisonChunkBytes, len(data))
			for end < len(data) && !utf8.RuneStart(data[end]) {
				end--
			}
			a, b := start, end
			chunks = append(chunks, func(d []byte) string { return string(d[a:b]) })
			start = end
		}
		return poisonText, chunks
	}
	raw := PoisonChunkBytes / 4 * 3 // base64 grows data by 4/3
	for start := 0; start < len(data); start += raw {
		a, b := start, min(start+raw, len(data))
		chunks = append(chunks, func(d []byte) string { return base64.StdEncoding.EncodeToString(d[a:b]) })
	}
	return poisonBase64, chunks
}

// attributeBytes is the size of attrs' names and values.
func attributeBytes(attrs map[string]string) int {
	n := 0
	for k, v := range attrs {
		n += len(k) + len(v)
	}
	return n
}

// boundID keeps an id the record stores within limits.MaxIDBytes (a message
// may be poison for carrying a longer one; its data keeps what it has).
func boundID(id string) string { return logging.Truncate(id, limits.MaxIDBytes) }

// PoisonMessage is a message as its poison record keeps it.
type PoisonMessage struct {
	Data        []byte
	Attributes  map[string]string
	OrderingKey string
	MessageID   string
	Fields      map[string]any // the record's other fields (reason, error_type, …)
}

// ReadPoison reads the poison record at path (as RecordPoison returned it)
// and reassembles the message it keeps, checking its length and SHA-256.
func (e *Engine) ReadPoison(ctx context.Context, path string) (PoisonMessage, error) {
	const op = "read poison"
	coll, id, ok := strings.Cut(path, "/")
	if !ok || coll != e.poison {
		return PoisonMessage{}, newError(TypeConfiguration, op, "%q is not a record of %s", path, e.poison)
	}
	key := store.Key{Collection: coll, ID: id}
	var ops opcount.Counts
	get := func(key store.Key) (doc store.Document, err error) {
		err = e.runTx(ctx, &ops, func(ctx context.Context, tx store.Tx) error {
			doc, err = tx.Get(ctx, key)
			return err
		})
		return doc, err
	}
	rec, err := get(key)
	if err != nil {
		return PoisonMessage{}, wrap(op, err)
	}
	f := rec.Fields
	text := []string{str(f, "data")}
	for i := 1; i < int(i64(f, "dataChunks")); i++ {
		chunk, err := get(poisonChunkKey(key, i))
		if err != nil {
			return PoisonMessage{}, wrap(op, fmt.Errorf("chunk %d: %w", i, err))
		}
		text = append(text, str(chunk.Fields, "data"))
	}
	var data []byte
	switch enc := str(f, "dataEncoding"); enc {
	case poisonText:
		data = []byte(strings.Join(text, ""))
	case poisonBase64:
		for i, t := range text {
			b, err := base64.StdEncoding.DecodeString(t)
			if err != nil {
				return PoisonMessage{}, newError(TypeConfiguration, op, "chunk %d of %s: %v", i, path, err)
			}
			data = append(data, b...)
		}
	default:
		return PoisonMessage{}, newError(TypeConfiguration, op, "%s: unknown dataEncoding %q", path, enc)
	}
	sum := sha256.Sum256(data)
	if int64(len(data)) != i64(f, "dataBytes") || hex.EncodeToString(sum[:]) != str(f, "dataSha256") {
		return PoisonMessage{}, newError(TypeConfiguration, op, "%s: the data reassembled (%d bytes) does not match the record (%d bytes, sha256 %s)",
			path, len(data), i64(f, "dataBytes"), str(f, "dataSha256"))
	}
	// Fields are the caller's: a copy of the record, which is read-only.
	m := PoisonMessage{Data: data, Attributes: map[string]string{}, OrderingKey: str(f, "orderingKey"), MessageID: str(f, metaMessageID),
		Fields: store.CloneValue(f).(map[string]any)}
	for k, v := range sub(f, "attributes") {
		m.Attributes[k], _ = v.(string)
	}
	for _, k := range []string{"data", "attributes", "orderingKey", metaMessageID} {
		delete(m.Fields, k)
	}
	return m, nil
}
