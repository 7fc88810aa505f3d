package envelope

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/eventpipe/eventpipe/consumer/logging"
	"github.com/eventpipe/eventpipe/internal/fielderr"
)

// FieldError is a poison-message error: the envelope or payload is invalid
// and redelivering it cannot help. It names the field (Path, e.g.
// "message.data"), the Problem and the Fix for the producer. It is
// fielderr.Error, eventpipe's one field error.
type FieldError = fielderr.Error

// fieldError is the error of field of the push envelope: problem, and fix.
func fieldError(field, problem, fix string) *FieldError {
	return &FieldError{In: "push envelope", Path: field, Problem: problem, Fix: fix}
}

// isSubscriptionName reports whether s has the shape of a full
// subscription name, projects/PROJECT/subscriptions/SUBSCRIPTION with
// PROJECT and SUBSCRIPTION not empty and without a slash: what the regular
// expression ^projects/[^/]+/subscriptions/[^/]+$ matches
// (TestIsSubscriptionNameIsTheRegexp), checked on every push in 25 ns where
// the regular expression took 690.
func isSubscriptionName(s string) bool {
	rest, ok := strings.CutPrefix(s, "projects/")
	if !ok {
		return false
	}
	project, rest, ok := strings.Cut(rest, "/")
	if !ok || project == "" {
		return false
	}
	sub, ok := strings.CutPrefix(rest, "subscriptions/")
	return ok && sub != "" && !strings.Contains(sub, "/")
}

// rawEnvelope is the push body's members; they are type-checked by hand
// so every error can name its field. The message and its data are kept as
// slices of the body (rawValue), not copied: a push body is mostly the
// message's data.
type rawEnvelope struct {
	Message, Subscription, DeliveryAttempt rawValue
}

// rawMessage is the message object's members, slices of the body too.
type rawMessage struct {
	Data, Attributes, MessageID, MessageIDSnake, PublishTime, PublishTimeSnake, OrderingKey rawValue
}

// envelopeMembers finds the members of the push body, a valid JSON object.
func envelopeMembers(body []byte) rawEnvelope {
	var env rawEnvelope
	membersNamed(body, []string{"message", "subscription", "deliveryAttempt"},
		&env.Message, &env.Subscription, &env.DeliveryAttempt)
	return env
}

// messageMembers finds the members of msg, a valid JSON object.
func messageMembers(msg rawValue) rawMessage {
	var raw rawMessage
	membersNamed(msg, []string{"data", "attributes", "messageId", "message_id", "publishTime", "publish_time", "orderingKey"},
		&raw.Data, &raw.Attributes, &raw.MessageID, &raw.MessageIDSnake, &raw.PublishTime, &raw.PublishTimeSnake, &raw.OrderingKey)
	return raw
}

// membersNamed sets *into[i] to the value of the member of obj, a valid
// JSON object, named names[i] (see nameFolds; the last of a name given
// twice wins, as in encoding/json).
func membersNamed(obj []byte, names []string, into ...*rawValue) {
	eachMember(obj, skipSpace(obj, 0), func(name, nameEnd, value, end int) {
		for i, field := range names {
			if nameFolds(obj[name:nameEnd], field) {
				*into[i] = obj[value:end]
				return
			}
		}
	})
}

// DecodePush decodes and validates a push request body. Every error it
// returns is a *FieldError. The message's data is decoded from base64 in
// place, in body (a push body is mostly the data's base64, which decodes to
// three quarters of it): the message's Data is part of body, which its
// caller must keep as it is while it uses the message, and the body is the
// message's only copy of its data.
//
// Until the data is decoded, body is as it was sent: an error before (the
// envelope's) returns an empty message, and Peek salvages what it can from
// body. An error after (the payload's: the data is not a JSON object)
// returns the message with every envelope field and its Data, and body no
// longer holds the data's base64.
//
// The envelope's members are found as encoding/json finds a struct's
// fields (see nameFolds), in the body checked whole first (validJSON).
func DecodePush(body []byte) (Message, error) {
	// Trimmed as strictObject trims (bytes.TrimSpace: Unicode white space,
	// more than JSON's), so that the same bodies are objects.
	if obj := bytes.TrimSpace(body); !validJSON(obj) || !isObject(obj) {
		return Message{}, fieldError("(body)", "not a JSON object: "+strictObject(body, &struct{}{}).Error(),
			`send the Pub/Sub push envelope {"message":{...},"subscription":"projects/P/subscriptions/S"}`)
	}
	env := envelopeMembers(bytes.TrimSpace(body))
	if isAbsent(env.Message) {
		return Message{}, fieldError("message", "missing", "send the Pub/Sub push envelope with a message object "+
			"(a body that is the payload itself comes from a subscription with payload unwrapping, pushConfig.noWrapper: turn it off)")
	}
	if env.Message[0] != '{' {
		return Message{}, fieldError("message", "not a JSON object", "message must be an object with data, messageId and publishTime")
	}
	raw := messageMembers(env.Message)
	var m Message
	var err error
	if m.Subscription, err = requiredString(env.Subscription, "subscription"); err != nil {
		return Message{}, err
	}
	if !isSubscriptionName(m.Subscription) {
		return Message{}, fieldError("subscription", Quote(m.Subscription)+" is not a full subscription name",
			"use the form projects/PROJECT/subscriptions/SUBSCRIPTION")
	}
	if m.DeliveryAttempt, err = deliveryAttempt(env.DeliveryAttempt); err != nil {
		return Message{}, err
	}
	if m.ID, err = eitherString(raw.MessageID, raw.MessageIDSnake, "message.messageId", "message.message_id"); err != nil {
		return Message{}, err
	}
	pt, err := eitherString(raw.PublishTime, raw.PublishTimeSnake, "message.publishTime", "message.publish_time")
	if err != nil {
		return Message{}, err
	}
	if m.PublishTime, err = ParseTime(pt); err != nil {
		return Message{}, fieldError("message.publishTime", Quote(pt)+" is not an RFC 3339 timestamp",
			"send a time such as 2026-01-02T15:04:05.123Z")
	}
	if err := checkPublishTime(m.PublishTime); err != nil {
		return Message{}, err
	}
	if m.Attributes, err = attributes(raw.Attributes); err != nil {
		return Message{}, err
	}
	if !isAbsent(raw.OrderingKey) {
		if m.OrderingKey, err = requiredString(raw.OrderingKey, "message.orderingKey"); err != nil {
			return Message{}, err
		}
	}
	if err := m.CheckIDs(); err != nil {
		return Message{}, err
	}
	if m.Data, err = messageData(raw.Data); err != nil {
		return Message{}, err
	}
	if m.Payload, err = DecodePayload(m.Data); err != nil {
		return m, err
	}
	return m, nil
}

// DecodePulled checks a pulled message, whose fields the client library
// read, as DecodePush checks a pushed one and in the same order, so that
// both refuse a message for the same field: its publish time, its ids, then
// its payload, which it decodes from m.Data into m.Payload. Every error is
// a *FieldError.
func DecodePulled(m *Message) error {
	if err := checkPublishTime(m.PublishTime); err != nil {
		return err
	}
	if err := m.CheckIDs(); err != nil {
		return err
	}
	payload, err := DecodePayload(m.Data)
	if err != nil {
		return err
	}
	m.Payload = payload
	return nil
}

// messageData decodes the base64 JSON string raw: in place when it has no
// escapes (Pub/Sub's never do), else from its unescaped copy.
func messageData(raw rawValue) ([]byte, error) {
	const field = "message.data"
	if isAbsent(raw) {
		return nil, fieldError(field, "missing", "set "+field+" to a non-empty string")
	}
	if raw[0] != '"' {
		return nil, fieldError(field, fmt.Sprintf("%s is not a string", truncate(raw)), "send "+field+" as a JSON string")
	}
	text := raw[1 : len(raw)-1]
	if bytes.IndexByte(text, '\\') >= 0 {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fieldError(field, "not a valid JSON string: "+err.Error(), "send "+field+" as a JSON string")
		}
		return decodeBase64([]byte(s), false)
	}
	return decodeBase64(text, true)
}

// base64Chunk is how much base64 text decodeBase64 decodes at once: whole
// quanta (4 characters, 3 bytes), so a chunk decodes as it does within
// the whole text.
const base64Chunk = 4 << 10

// decodeBase64 decodes s, standard or URL-safe base64, padded or not
// (strictly: the unused bits of a last partial quantum are zero). In place
// it writes the data over s itself, and only once all of s is known to
// decode, so a text that does not is left as it was; the caller's s must
// then hold no line break (Decode skips them, which would shift a chunk's
// quanta), as the text of a JSON string without escapes cannot. Otherwise
// the data gets a buffer of its own.
func decodeBase64(s []byte, inPlace bool) ([]byte, error) {
	if len(s) == 0 {
		return nil, fieldError("message.data", "empty", "publish a JSON object as the message data")
	}
	enc := base64.StdEncoding
	if bytes.ContainsAny(s, "-_") {
		enc = base64.URLEncoding
	}
	if s[len(s)-1] != '=' && len(s)%4 != 0 {
		enc = enc.WithPadding(base64.NoPadding)
	}
	enc = enc.Strict()
	var n int
	var err error
	if inPlace {
		if _, err = decodeChunks(enc, s, nil); err == nil {
			n, err = decodeChunks(enc, s, s)
		}
	} else {
		b := make([]byte, enc.DecodedLen(len(s)))
		n, err = enc.Decode(b, s)
		s = b
	}
	if err != nil {
		return nil, fieldError("message.data", "not valid base64 (standard or URL-safe): "+err.Error(),
			"base64-encode the JSON payload (Pub/Sub does this for you)")
	}
	return s[:n], nil
}

// decodeChunks decodes s base64Chunk characters at a time through a buffer
// on its stack, copying each chunk's bytes to dst (nil: nowhere), and
// returns how many it decoded. dst may be s itself: the bytes decoded from
// a chunk are fewer than its characters, so they never reach a character
// not yet read. An error is at its offset in s; a chunk that ends with
// padding but is not the last is one (the padding ends the text).
func decodeChunks(enc *base64.Encoding, s, dst []byte) (int, error) {
	var buf [base64Chunk / 4 * 3]byte
	n := 0
	for off := 0; off < len(s); off += base64Chunk {
		chunk := s[off:min(off+base64Chunk, len(s))]
		m, err := enc.Decode(buf[:], chunk)
		var corrupt base64.CorruptInputError
		switch {
		case errors.As(err, &corrupt):
			return n, base64.CorruptInputError(int64(off) + int64(corrupt))
		case err != nil:
			return n, err
		case off+len(chunk) < len(s) && m != len(buf):
			return n, base64.CorruptInputError(off + len(chunk))
		}
		if dst != nil {
			copy(dst[n:], buf[:m])
		}
		n += m
	}
	return n, nil
}

func deliveryAttempt(raw rawValue) (int, error) {
	if isAbsent(raw) {
		return 0, nil
	}
	var n int
	if err := json.Unmarshal(raw, &n); err != nil || n < 1 {
		return 0, fieldError("deliveryAttempt", fmt.Sprintf("%s is not a positive integer", truncate(raw)),
			"omit deliveryAttempt or send the count Pub/Sub sends (1, 2, ...)")
	}
	return n, nil
}

func attributes(raw rawValue) (map[string]string, error) {
	if isAbsent(raw) {
		return map[string]string{}, nil
	}
	var obj map[string]rawValue
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fieldError("message.attributes", "not a JSON object", "send attributes as an object of string values")
	}
	attrs := make(map[string]string, len(obj))
	var bad string // the first attribute, by name, whose value is not a string
	for k, v := range obj {
		if v[0] != '"' {
			if bad == "" || k < bad {
				bad = k
			}
			continue
		}
		attrs[k] = unquote(v)
	}
	if bad != "" {
		return nil, fieldError("message.attributes."+truncate([]byte(bad)), truncate(obj[bad])+" is not a string",
			"attribute values are strings: quote the value")
	}
	return attrs, nil
}

// checkPublishTime reports a zero publish time as a *FieldError: the
// engine reads the zero time as "no publish time", ordered before every
// other, and no message may claim it.
func checkPublishTime(t time.Time) error {
	if !t.IsZero() {
		return nil
	}
	return fieldError("message.publishTime", "is the zero time (0001-01-01T00:00:00Z), which no publisher stamps",
		"send the time Pub/Sub published the message, such as 2026-01-02T15:04:05.123Z")
}

// eitherString returns the value of whichever spelling is present; when both
// are present they must agree.
func eitherString(camel, snake rawValue, camelName, snakeName string) (string, error) {
	switch {
	case isAbsent(camel) && isAbsent(snake):
		return "", fieldError(camelName, "missing (neither "+camelName+" nor "+snakeName+" is set)",
			"send the field Pub/Sub sets on every message")
	case isAbsent(snake):
		return requiredString(camel, camelName)
	case isAbsent(camel):
		return requiredString(snake, snakeName)
	}
	a, err := requiredString(camel, camelName)
	if err != nil {
		return "", err
	}
	b, err := requiredString(snake, snakeName)
	if err != nil {
		return "", err
	}
	if a != b {
		return "", fieldError(camelName, Quote(a)+" disagrees with "+snakeName+" "+Quote(b),
			"send one spelling, or the same value in both")
	}
	return a, nil
}

// requiredString returns the non-empty string raw, a valid JSON value,
// holds.
func requiredString(raw rawValue, field string) (string, error) {
	if isAbsent(raw) {
		return "", fieldError(field, "missing", "set "+field+" to a non-empty string")
	}
	if raw[0] != '"' {
		return "", fieldError(field, fmt.Sprintf("%s is not a string", truncate(raw)), "send "+field+" as a JSON string")
	}
	s := unquote(raw)
	if s == "" {
		return "", fieldError(field, "empty", "set "+field+" to a non-empty string")
	}
	return s, nil
}

// strictObject unmarshals data, which must be a JSON object, into v.
func strictObject(data []byte, v any) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return errors.New("expected '{'")
	}
	return json.Unmarshal(data, v)
}

func isAbsent(raw []byte) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// maxQuoted bounds the bytes of a value an error quotes, so that the
// error's fix survives the log line's bound (logging.Bound) whatever the
// value's length.
const maxQuoted = 40

// truncate returns raw's text cut to maxQuoted bytes (logging.Truncate).
func truncate(raw []byte) string { return logging.Truncate(string(raw), maxQuoted) }

// Quote returns s quoted as Go quotes it, cut like truncate: how an error
// names a value someone sent, which may be megabytes long.
func Quote(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	return strconv.Quote(strings.TrimSuffix(logging.Truncate(s, maxQuoted), "…")) + "…"
}

// ParseTime parses an RFC 3339 timestamp (fractions of a second of any
// length). As RFC 3339 allows, its "T" and "Z" may be lower case.
func ParseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err == nil {
		return t, nil
	}
	const date = len("2006-01-02")
	if len(s) > date && (s[date] == 't' || s[len(s)-1] == 'z') {
		b := []byte(s)
		if b[date] == 't' {
			b[date] = 'T'
		}
		if b[len(b)-1] == 'z' {
			b[len(b)-1] = 'Z'
		}
		if t, err2 := time.Parse(time.RFC3339Nano, string(b)); err2 == nil {
			return t, nil
		}
	}
	return time.Time{}, err
}

// Peek salvages what it can from a body DecodePush rejected, for the log
// line, the DLQ decision and the poison record: message id, subscription,
// delivery attempt and publish time when they parse (ids only when they are
// within limits.MaxIDBytes). Data is the raw body.
func Peek(body []byte) Message {
	m := Message{Data: body, Attributes: map[string]string{}}
	var env struct {
		Message struct {
			MessageID   any `json:"messageId"`
			MessageID2  any `json:"message_id"`
			PublishTime any `json:"publishTime"`
		} `json:"message"`
		Subscription    any `json:"subscription"`
		DeliveryAttempt any `json:"deliveryAttempt"`
	}
	if json.Unmarshal(body, &env) != nil {
		return m
	}
	m.ID, _ = env.Message.MessageID.(string)
	if m.ID == "" {
		m.ID, _ = env.Message.MessageID2.(string)
	}
	m.Subscription, _ = env.Subscription.(string)
	if CheckID("", m.ID) != nil {
		m.ID = ""
	}
	if CheckID("", m.Subscription) != nil {
		m.Subscription = ""
	}
	if n, ok := env.DeliveryAttempt.(float64); ok && n >= 1 && n == float64(int(n)) {
		m.DeliveryAttempt = int(n)
	}
	if s, ok := env.Message.PublishTime.(string); ok {
		m.PublishTime, _ = ParseTime(s)
	}
	return m
}
