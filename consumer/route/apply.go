package route

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/eventpipe/eventpipe/consumer/envelope"
	"github.com/eventpipe/eventpipe/consumer/keys"
	"github.com/eventpipe/eventpipe/consumer/limits"
	"github.com/eventpipe/eventpipe/consumer/logging"
	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/internal/fielderr"
)

// ErrUnroutable is wrapped by Match when no route accepts a payload.
var ErrUnroutable = errors.New("unroutable payload")

// FieldError is a problem with one message's payload under its route: a
// missing required field or a value of the wrong type (Path is the route's
// field). It is poison. It is fielderr.Error, eventpipe's one field error.
type FieldError = fielderr.Error

// fieldError is the error of route's field: problem, and fix.
func fieldError(route, field, problem, fix string) *FieldError {
	return &FieldError{In: "route " + route, Path: field, Problem: problem, Fix: fix}
}

// Routed is one message as its route reads it (Route.Apply): the event,
// the document it writes, its ordering values and its fields; everything
// the engine needs.
type Routed struct {
	Route         *Route
	EventType     string
	SchemaVersion string
	// AggregateID is the raw (un-normalised) value of the target id field;
	// the engine names the document keys.DocID(env, AggregateID). On a
	// lease route it is the action.aggregate field (the sequence guard).
	AggregateID string
	// Target is the document written (latest-state, receipt); empty for lease.
	Target store.Key
	// EventTime and Sequence are the ordering values (latest-state);
	// Sequence is action.sequence on a lease route.
	EventTime time.Time
	Sequence  *int64
	// EventID and Identity feed the logical-event dedupe key (Route.Dedupe).
	EventID  string
	Identity map[string]any

	// values[i] is the extracted value of Route.fieldOrder[i], nil when the
	// field is absent: the output fields are built from them on demand
	// (NewFields, Fields), so a duplicate or stale message builds no map.
	values []any
	fields map[string]any // cached by Fields
	// identity is Identity's map, made on the first identity field.
	identity map[string]any
	// env and envValue are the environment and its boxed value.
	env      string
	envValue any
}

// sourceKind says where a field's source reads its value.
type sourceKind uint8

// Kinds of sources: a payload path, or one of the $ names (the special
// sources in the order of specialSources, then $attributes.NAME).
const (
	fromPayload sourceKind = iota
	fromMessageID
	fromPublishTime
	fromTopic
	fromSubscription
	fromEnv
	fromOrderingKey
	fromAttribute
)

// compiledSource is one source of a field, resolved when the routes are
// compiled.
type compiledSource struct {
	src  string // as written, for errors
	kind sourceKind
	// name is the attribute (fromAttribute) or the payload path (fromPayload).
	name string
	// conversion indexes Apply's converted values: one per distinct
	// (source, type).
	conversion int
}

// compiledField is a field with its sources resolved.
type compiledField struct {
	Field
	from []compiledSource
	// head is the field's top-level output name ("source" for "source.topic").
	head string
}

// compile resolves the fields' sources (r is valid; fieldOrder is set).
func (r *Route) compile() {
	type pair struct{ src, typ string }
	conversions := map[pair]int{}
	r.compiled = make([]compiledField, len(r.fieldOrder))
	for i, name := range r.fieldOrder {
		f := r.Fields[name]
		head, _, _ := strings.Cut(name, ".")
		cf := compiledField{Field: f, from: make([]compiledSource, len(f.From)), head: head}
		for j, src := range f.From {
			cs := compiledSource{src: src, kind: fromPayload, name: src}
			if i := slices.Index(specialSources, src); i >= 0 {
				cs.kind = fromMessageID + sourceKind(i) // specialSources lists them in kind order
			} else if attr, ok := strings.CutPrefix(src, "$attributes."); ok {
				cs.kind, cs.name = fromAttribute, attr
			}
			k := pair{src, f.Type}
			n, ok := conversions[k]
			if !ok {
				n = len(conversions)
				conversions[k] = n
			}
			cs.conversion = n
			cf.from[j] = cs
		}
		r.compiled[i] = cf
	}
	r.conversions = len(conversions)
}

// newRouted returns an empty Routed of r.
func (r *Route) newRouted() *Routed {
	return &Routed{Route: r, values: make([]any, len(r.fieldOrder))}
}

// stackConversions is how many (source, type) pairs Apply keeps the
// converted values of on the stack; a route with more allocates them.
const stackConversions = 32

// Fields returns the output fields, nested on dots. The map is built on the
// first call and shared by later calls: callers must not modify it.
func (p *Routed) Fields() map[string]any {
	if p.fields == nil {
		p.fields = p.NewFields()
	}
	return p.fields
}

// NewFields builds the output fields, nested on dots: a new map on every
// call, sharing no map or slice with the Routed or the payload, so the caller
// owns it (engine.FieldSource).
func (p *Routed) NewFields() map[string]any {
	out := make(map[string]any, len(p.values))
	for i, v := range p.values {
		if v != nil {
			setPath(out, p.Route.fieldOrder[i], store.CloneValue(v))
		}
	}
	return out
}

// HasField reports whether the output fields have the top-level field name
// (engine.FieldSource), without building them.
func (p *Routed) HasField(name string) bool {
	for i, v := range p.values {
		if v != nil && p.Route.compiled[i].head == name {
			return true
		}
	}
	return false
}

// Values returns the output fields' leaf values, nil for absent fields
// (engine.FieldSource). The slice is the Routed's own: do not modify it.
func (p *Routed) Values() []any { return p.values }

// Callback returns the callback route with name, or nil.
func (t *Table) Callback(name string) *Route { return t.callbacks[name] }

// Routes returns every route: pubsub routes in order, then callbacks.
func (t *Table) Routes() []*Route {
	return slices.AppendSeq(slices.Clone(t.pubsub), maps.Values(t.callbacks))
}

// Match returns the first pubsub route whose match holds for payload.
func (t *Table) Match(payload envelope.Payload) (*Route, error) {
	for _, r := range t.pubsub {
		if r.matches(payload) {
			return r, nil
		}
	}
	return nil, fmt.Errorf("%w: no route matches (payload keys %s); fix: publish a payload one of the routes accepts, or add a route",
		ErrUnroutable, payloadKeys(payload))
}

func (r *Route) matches(payload envelope.Payload) bool {
	if r.Match.TypeField != "" {
		s, ok := stringAt(payload, r.Match.TypeField)
		if !ok {
			return false
		}
		if !slices.Contains(r.Match.Types, s) {
			return false
		}
	}
	for _, f := range r.Match.Fields {
		if !payload.Present(f) {
			return false
		}
	}
	return true
}

// Apply extracts the route's fields from msg and names its target document.
// Errors are *FieldError (poison).
func (r *Route) Apply(msg *envelope.Message, env string) (*Routed, error) {
	p := r.newRouted()
	p.env, p.envValue = env, env
	if r.Match.TypeField != "" {
		p.EventType, _ = stringAt(msg.Payload, r.Match.TypeField)
	}
	p.SchemaVersion, _ = stringAt(msg.Payload, "schemaVersion")
	// Of the extracted values, the Routed itself needs the target id (on a
	// lease route, action.aggregate) and the ordering fields (nil when not
	// extracted). A field name is never "", so an unset one matches none.
	var targetID, eventTime, sequence any
	idField, timeField, seqField := r.Target.ID, "", ""
	if o := r.Ordering; o != nil {
		timeField, seqField = o.EventTime, o.Sequence
	}
	if a := r.Action; a != nil && a.Aggregate != "" {
		idField, seqField = a.Aggregate, a.Sequence // lease routes have no target
	}
	// converted[i] is the value of the route's i-th (source, type) pair once
	// a field converted it, so that fields reading the same source as the
	// same type share one value. Only Apply needs them.
	var onStack [stackConversions]any
	converted := onStack[:]
	if r.conversions > len(converted) {
		converted = make([]any, r.conversions)
	}
	// decoded holds the payload values the fields read, for the dedupe
	// fields below: a value is decoded from the payload once.
	var decoded decodedValues
	for i, name := range r.fieldOrder {
		v, ok, err := p.extract(name, &r.compiled[i], msg, converted, &decoded)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		p.values[i] = v
		if name == idField {
			targetID = v
		}
		if name == timeField {
			eventTime = v
		}
		if name == seqField {
			sequence = v
		}
	}
	if r.Target.ID != "" {
		if err := checkIDValue(r, r.Target.ID, targetID, "aggregate id"); err != nil {
			return nil, err
		}
		p.AggregateID = sprint(targetID)
		if err := checkID(r, r.Target.ID, p.AggregateID); err != nil {
			return nil, err
		}
		id, err := keys.DocID(env, p.AggregateID)
		if err != nil {
			return nil, fieldError(r.Name, r.Target.ID, "cannot name a document: "+err.Error(), "send a non-empty id")
		}
		p.Target = store.Key{Collection: r.Target.Collection, ID: id}
	} else if targetID != nil {
		if err := checkIDValue(r, idField, targetID, "aggregate id"); err != nil {
			return nil, err
		}
		p.AggregateID = sprint(targetID) // the lease's sequence guard
	}
	p.EventTime, _ = eventTime.(time.Time)
	if v, ok := sequence.(int64); ok {
		seq := v // allocated only when there is a sequence
		p.Sequence = &seq
	}
	if d := r.Dedupe; d != nil {
		if d.EventIDField != "" {
			if v, ok := decoded.get(msg.Payload, d.EventIDField); ok && v != nil {
				if err := checkIDValue(r, d.EventIDField, v, "event id"); err != nil {
					return nil, err
				}
				p.EventID = sprint(v)
				if err := checkID(r, d.EventIDField, p.EventID); err != nil {
					return nil, err
				}
			}
		}
		// Identity fields define the event only when all are present; a
		// partial identity could merge distinct events, so the message id
		// (transport dedupe) is used instead.
		if p.identity == nil {
			p.identity = make(map[string]any, len(d.Identity))
		}
		for _, f := range d.Identity {
			if v, ok := decoded.get(msg.Payload, f); ok && v != nil {
				p.identity[f] = v
			}
		}
		if len(p.identity) > 0 && len(p.identity) == len(d.Identity) {
			p.Identity = p.identity
		}
	}
	return p, nil
}

// checkID reports an id longer than limits.MaxIDBytes as a *FieldError.
func checkID(r *Route, field, id string) error {
	if len(id) <= limits.MaxIDBytes {
		return nil
	}
	return fieldError(r.Name, field, fmt.Sprintf("is %d bytes long; ids are at most %d bytes", len(id), limits.MaxIDBytes),
		fmt.Sprintf("send an id of at most %d bytes", limits.MaxIDBytes))
}

// checkIDValue reports, as a *FieldError, an id value (what names an
// aggregate or an event) that is not a string, a number or a time: the
// text of an object or an array is not one value's (["a b"] and ["a","b"]
// print alike) and a boolean's is a string's ("true"), so they would merge
// distinct aggregates or events.
func checkIDValue(r *Route, field string, v any, what string) error {
	switch v.(type) {
	case map[string]any, []any, bool:
		return fieldError(r.Name, field, kindOf(v)+" is not an "+what, "send "+field+" as a string or a number")
	}
	return nil
}

// sprint is fmt.Sprint(v), without fmt for the common string case.
func sprint(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprint(v)
}

// extract returns field name's value: the first of its sources present,
// converted to its type. A source converted to that type already, for
// another field, gives the same value.
func (p *Routed) extract(name string, f *compiledField, msg *envelope.Message, converted []any, decoded *decodedValues) (any, bool, error) {
	for i := range f.from {
		src := &f.from[i]
		if v := converted[src.conversion]; v != nil {
			return v, true, nil
		}
		v, ok := p.source(src, msg, decoded)
		if !ok || v == nil {
			continue
		}
		cv, err := convert(v, f.Type)
		if err != nil {
			return nil, false, fieldError(p.Route.Name, name, fmt.Sprintf("value from %s: %v", src.src, err), typeFix(src.src, f.Type))
		}
		converted[src.conversion] = cv
		return cv, true, nil
	}
	if f.Required {
		return nil, false, fieldError(p.Route.Name, name, "missing (looked in "+strings.Join(f.From, ", ")+")", missingFix(&f.from[0]))
	}
	return nil, false, nil
}

// typeFix is the fix for a value from src that is not of type typ.
func typeFix(src, typ string) string {
	switch typ {
	case "timestamp":
		return "send " + src + " as an RFC 3339 timestamp such as 2026-01-02T15:04:05.123Z, or as epoch seconds"
	case "integer":
		return "send " + src + " as an integer of 64 bits at most (a JSON number without fraction or exponent, or its digits in a string)"
	case "number":
		return "send " + src + " as a JSON number"
	case "boolean":
		return "send " + src + " as true or false"
	}
	return "send " + src + " as a JSON string or number"
}

// missingFix is the fix for a required field none of whose sources is
// present; src is its first.
func missingFix(src *compiledSource) string {
	switch src.kind {
	case fromPayload:
		return "send " + src.name + " in the payload"
	case fromAttribute:
		return "publish the message with the attribute " + src.name
	case fromTopic:
		return "set the route's topic, or publish the message with the attribute topic"
	case fromOrderingKey:
		return "publish the message with an ordering key"
	}
	return "deliver the message with " + src.src + " set, as Pub/Sub does"
}

// source returns the value of one source of a field (a payload value is
// kept in decoded). The route's topic is boxed once, not per message.
func (p *Routed) source(src *compiledSource, msg *envelope.Message, decoded *decodedValues) (any, bool) {
	switch src.kind {
	case fromMessageID:
		return msg.ID, msg.ID != ""
	case fromPublishTime:
		return msg.PublishTime, !msg.PublishTime.IsZero()
	case fromTopic:
		if p.Route.topicValue != nil {
			return p.Route.topicValue, true
		}
		topic := msg.Attributes["topic"]
		return topic, topic != ""
	case fromSubscription:
		return msg.Subscription, msg.Subscription != ""
	case fromEnv:
		return p.envValue, p.env != ""
	case fromOrderingKey:
		return msg.OrderingKey, msg.OrderingKey != ""
	case fromAttribute:
		v, ok := msg.Attributes[src.name]
		return v, ok
	}
	v, ok := msg.Payload.Get(src.name)
	if ok {
		decoded.add(src.name, v)
	}
	return v, ok
}

// decodedValues are payload values Apply has decoded, by path: at most
// maxDecoded (a route's fields read few), kept on Apply's stack.
type decodedValues struct {
	n     int
	paths [maxDecoded]string
	vals  [maxDecoded]any
}

// maxDecoded is how many payload values decodedValues keeps.
const maxDecoded = 16

// add keeps v, the value at path, if there is room.
func (d *decodedValues) add(path string, v any) {
	if d.n < maxDecoded {
		d.paths[d.n], d.vals[d.n] = path, v
		d.n++
	}
}

// get returns the value at path: as decoded already, or from payload.
// The value is shared: the caller must not modify it (Payload.Get's values
// are new, and no caller modifies them).
func (d *decodedValues) get(payload envelope.Payload, path string) (any, bool) {
	for i := range d.n {
		if d.paths[i] == path {
			return d.vals[i], true
		}
	}
	return payload.Get(path)
}

// convert turns a JSON value into the route field's type.
func convert(v any, typ string) (any, error) {
	switch typ {
	case "", "any":
		return v, nil
	case "string":
		switch x := v.(type) {
		case string:
			return v, nil // already boxed: no new allocation
		case json.Number:
			return x.String(), nil
		case time.Time:
			return x.UTC().Format(time.RFC3339Nano), nil
		}
	case "timestamp":
		switch x := v.(type) {
		case time.Time:
			if x == x.UTC() { // UTC without a monotonic reading: as is
				return v, nil
			}
			return x.UTC(), nil
		case string:
			t, err := envelope.ParseTime(x)
			if err != nil {
				return nil, fmt.Errorf("%s is not an RFC 3339 timestamp", envelope.Quote(x))
			}
			return t.UTC(), nil
		case json.Number: // seconds since the epoch
			f, err := x.Float64()
			if err != nil || f < 0 || f > 1e11 {
				return nil, fmt.Errorf("%s is not epoch seconds (0 to 1e11: milliseconds are too large)", envelope.Quote(string(x)))
			}
			sec, frac := math.Modf(f)
			return time.Unix(int64(sec), int64(frac*1e9)).UTC(), nil
		}
	case "integer":
		var text string
		switch x := v.(type) {
		case json.Number:
			text = string(x)
		case string:
			text = x
		default:
			return nil, fmt.Errorf("%s is not an integer", kindOf(v))
		}
		n, err := strconv.ParseInt(text, 10, 64)
		if errors.Is(err, strconv.ErrRange) {
			return nil, fmt.Errorf("%s is beyond the range of a 64-bit integer", envelope.Quote(text))
		}
		if err != nil {
			return nil, fmt.Errorf("%s is not an integer", envelope.Quote(text))
		}
		return n, nil
	case "number":
		if x, ok := v.(json.Number); ok {
			f, err := x.Float64()
			if err != nil {
				return nil, fmt.Errorf("%s is beyond the range of a float64", envelope.Quote(string(x)))
			}
			return f, nil
		}
	case "boolean":
		if x, ok := v.(bool); ok {
			return x, nil
		}
	}
	return nil, fmt.Errorf("%s is not a %s", kindOf(v), typ)
}

// kindOf names the JSON kind of a payload value, for errors.
func kindOf(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case time.Time:
		return "a timestamp"
	}
	return fmt.Sprintf("%T", v)
}

func stringAt(payload envelope.Payload, path string) (string, bool) {
	v, _ := payload.Get(path)
	s, isStr := v.(string)
	return s, isStr
}

func setPath(m map[string]any, path string, v any) {
	for {
		head, rest, nested := strings.Cut(path, ".")
		if !nested {
			m[head] = v
			return
		}
		next, ok := m[head].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[head] = next
		}
		m, path = next, rest
	}
}

func payloadKeys(payload envelope.Payload) string {
	ks := payload.Keys()
	if len(ks) > 10 {
		ks = append(ks[:10], "…")
	}
	for i, k := range ks {
		// A key may be megabytes long; the error is logged, traced and
		// kept in the poison record, each bounded to a log field anyway.
		ks[i] = logging.Bound(k)
	}
	return "[" + strings.Join(ks, " ") + "]"
}
