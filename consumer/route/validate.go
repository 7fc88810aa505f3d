package route

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/eventpipe/eventpipe/consumer/engine"
	"github.com/eventpipe/eventpipe/consumer/settings"
)

// Table is a validated, ready-to-use set of routes.
type Table struct {
	pubsub    []*Route
	callbacks map[string]*Route
}

// Defaults applied to lease actions.
const (
	DefaultActionTimeout = 30 * time.Second
	DefaultLeaseTTL      = 10 * time.Minute
	// DefaultReceiptLease is how long a callback delivery's reservation
	// holds before a retry may take it over: applying a callback is one
	// transaction, and a holder that outlives its lease is fenced anyway.
	DefaultReceiptLease      = 30 * time.Second
	DefaultActionMaxAttempts = 5
)

var (
	routeName      = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,62}$`)
	collectionName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,99}$`)
	fieldType      = []string{"", "any", "string", "timestamp", "integer", "number", "boolean"}
	// specialSources are the $ names of field sources, in the order of
	// their sourceKind constants (fromMessageID first).
	specialSources = []string{"$messageId", "$publishTime", "$topic", "$subscription", "$env", "$orderingKey"}
)

// Compile validates c and returns its table. The error lists every problem,
// each naming the route, the field and the fix.
func Compile(c Config) (*Table, error) {
	t := &Table{callbacks: map[string]*Route{}}
	var errs []error
	if len(c.Routes) == 0 {
		errs = append(errs, errors.New("routes: empty (fix: add at least one route, or unset "+settings.Routes+" to use the built-in routes)"))
	}
	seen := map[string]bool{}
	for i := range c.Routes {
		r := &c.Routes[i]
		p := problems{where: fmt.Sprintf("routes[%d] %q", i, r.Name)}
		r.validate(&p)
		if seen[r.Name] {
			p.add("name", "duplicate route name", "give every route a unique name")
		}
		seen[r.Name] = true
		errs = append(errs, p.errs...)
		if len(p.errs) > 0 {
			continue
		}
		r.fieldOrder = slices.Sorted(maps.Keys(r.Fields))
		r.compile()
		if r.Topic != "" {
			r.topicValue = r.Topic
		}
		if r.Ingress == IngressCallback {
			t.callbacks[r.Name] = r
		} else {
			t.pubsub = append(t.pubsub, r)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("invalid routes:\n%w", err)
	}
	return t, nil
}

// problems collects validation errors of one route.
type problems struct {
	where string
	errs  []error
}

func (p *problems) add(field, problem, fix string) {
	p.errs = append(p.errs, &FieldError{In: p.where, Path: field, Problem: problem, Fix: fix})
}

func (r *Route) validate(p *problems) {
	if !routeName.MatchString(r.Name) {
		p.add("name", fmt.Sprintf("%q is not a valid route name", r.Name),
			"use 1-63 characters [a-z0-9_-], starting with a letter (it appears in URLs, logs and ids)")
	}
	switch r.Ingress {
	case "":
		r.Ingress = IngressPubSub
	case IngressPubSub, IngressCallback:
	default:
		p.add("ingress", fmt.Sprintf("%q is not an ingress", r.Ingress), `use "pubsub" or "callback"`)
	}
	r.validateMatch(p)
	r.validateFields(p)
	if r.Mode == ModeLease {
		if r.Target != (Target{}) {
			p.add("target", "lease routes write no target document (the lease record is keyed by route and event)", "remove target")
		}
	} else if !r.ToHandler() {
		r.validateTarget(p)
	}
	switch r.Mode {
	case ModeLatestState:
		r.validateOrdering(p)
	case ModeLease:
		r.validateAction(p)
	case ModeReceipt:
		if r.Ingress != IngressCallback {
			p.add("mode", "receipt mode is for callback routes", `set "ingress": "callback" or use latest-state`)
		}
	default:
		p.add("mode", fmt.Sprintf("%q is not a mode", r.Mode), `use "latest-state", "lease" or "receipt"`)
	}
	if r.Mode != ModeLatestState && r.Ordering != nil {
		p.add("ordering", "only latest-state routes order updates", "remove ordering")
	}
	if r.Action != nil && r.Mode != ModeLease {
		p.add("action", "only lease routes run an action", `set "mode": "lease" or remove action`)
	}
	if r.Ingress == IngressCallback {
		if r.Receipt == nil {
			r.Receipt = &Receipt{}
		}
		if r.Receipt.KeyField == "" && r.Receipt.Header == "" {
			r.Receipt.KeyField, r.Receipt.Header = "callback_id", "Idempotency-Key"
		}
		switch {
		case r.Receipt.LeaseTTL < 0:
			p.add("receipt.leaseTTL", fmt.Sprintf("%s is negative", time.Duration(r.Receipt.LeaseTTL)), `use a positive duration such as "30s"`)
		case r.Receipt.LeaseTTL == 0:
			r.Receipt.LeaseTTL = Duration(DefaultReceiptLease)
		}
	} else if r.Receipt != nil {
		p.add("receipt", "only callback routes take receipts", "remove receipt")
	}
	if r.Dedupe != nil && r.Dedupe.EventIDField == "" && len(r.Dedupe.Identity) == 0 {
		p.add("dedupe", "neither eventIdField nor identity is set", "name the event id field, the identity fields, or both")
	}
}

func (r *Route) validateMatch(p *problems) {
	m := r.Match
	empty := m.TypeField == "" && len(m.Types) == 0 && len(m.Fields) == 0
	if r.Ingress == IngressCallback {
		if !empty {
			p.add("match", "callback routes are chosen by URL, not by payload", "remove match")
		}
		return
	}
	if empty {
		p.add("match", "a pubsub route needs a match", `set "typeField" and "types", or "fields" (payload shape)`)
	}
	if (m.TypeField == "") != (len(m.Types) == 0) {
		p.add("match.types", "typeField and types go together", "set both or neither")
	}
}

func (r *Route) validateFields(p *problems) {
	if len(r.Fields) == 0 {
		p.add("fields", "no output fields", "map at least the fields the target id needs")
	}
	for name, f := range r.Fields {
		where := "fields." + name
		if name == "" || strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".") || strings.Contains(name, "..") {
			p.add(where, "bad output field name", `use names such as "status" or "source.topic"`)
		}
		if !slices.Contains(fieldType, f.Type) {
			p.add(where+".type", fmt.Sprintf("%q is not a type", f.Type), "use string, timestamp, integer, number, boolean or any")
		}
		if len(f.From) == 0 {
			p.add(where+".from", "no sources", `list payload paths or sources such as "$messageId"`)
		}
		for i, src := range f.From {
			if err := validSource(src); err != "" {
				p.add(fmt.Sprintf("%s.from[%d]", where, i), err, "use a payload path (a.b) or one of "+strings.Join(specialSources, ", ")+", $attributes.NAME")
			}
		}
	}
	for name := range r.Fields {
		for other := range r.Fields {
			if strings.HasPrefix(other, name+".") {
				p.add("fields."+name, fmt.Sprintf("conflicts with nested field %q", other), "use one or the other")
			}
		}
	}
}

func validSource(src string) string {
	switch {
	case src == "":
		return "empty source"
	case strings.HasPrefix(src, "$attributes."):
		if len(src) == len("$attributes.") {
			return "attribute name missing"
		}
	case strings.HasPrefix(src, "$"):
		if !slices.Contains(specialSources, src) {
			return fmt.Sprintf("%q is not a known source", src)
		}
	case strings.Contains(src, ".."), strings.HasPrefix(src, "."), strings.HasSuffix(src, "."):
		return fmt.Sprintf("%q is not a payload path", src)
	}
	return ""
}

func (r *Route) validateTarget(p *problems) {
	if !collectionName.MatchString(r.Target.Collection) {
		p.add("target.collection", fmt.Sprintf("%q is not a collection name", r.Target.Collection),
			"use letters, digits, _ or -, starting with a letter (no '/')")
	}
	if f, ok := r.Fields[r.Target.ID]; !ok {
		p.add("target.id", fmt.Sprintf("%q is not an output field", r.Target.ID), "name the output field holding the aggregate id, e.g. \"serviceId\"")
	} else if !f.Required {
		p.add(fmt.Sprintf("fields.%s.required", r.Target.ID), "the id field must be required", `set "required": true`)
	}
	if r.Target.MustExist && r.Mode != ModeReceipt {
		p.add("target.mustExist", "only receipt routes update existing targets", "remove mustExist")
	}
}

// checkFieldType reports (under setting) a field that is not an output
// field of type typ.
func (r *Route) checkFieldType(p *problems, setting, field, typ string) {
	f, ok := r.Fields[field]
	switch {
	case !ok:
		p.add(setting, fmt.Sprintf("%q is not an output field", field), "add it under fields")
	case f.Type != typ:
		p.add(fmt.Sprintf("fields.%s.type", field), setting+" needs type "+typ, fmt.Sprintf("set \"type\": %q", typ))
	}
}

func (r *Route) validateOrdering(p *problems) {
	o := r.Ordering
	if o == nil || o.EventTime == "" {
		p.add("ordering.eventTime", "latest-state needs an event time", `set "ordering": {"eventTime": "updatedAt"} (a timestamp field)`)
		return
	}
	r.checkFieldType(p, "ordering.eventTime", o.EventTime, "timestamp")
	if o.Sequence != "" {
		r.checkFieldType(p, "ordering.sequence", o.Sequence, "integer")
	}
	switch {
	case o.MaxSequenceJump < 0:
		p.add("ordering.maxSequenceJump", fmt.Sprintf("%d is negative", o.MaxSequenceJump), fmt.Sprintf("use a positive bound, or leave it out for the default (%d)", engine.DefaultMaxSequenceJump))
	case o.MaxSequenceJump > 0 && o.Sequence == "":
		p.add("ordering.maxSequenceJump", "bounds the sequence, and the route has none", `set "ordering.sequence" or remove maxSequenceJump`)
	}
}

func (r *Route) validateAction(p *problems) {
	a := r.Action
	if a == nil {
		p.add("action", "a lease route needs an action", `add "action": {"url": "https://...", "maxAttempts": 5}`)
		return
	}
	switch {
	case (a.Aggregate == "") != (a.Sequence == ""):
		p.add("action.aggregate", "the sequence guard needs both action.aggregate and action.sequence", `set both (e.g. "aggregate": "orderId", "sequence": "sequence") or neither`)
	case a.Aggregate != "":
		r.checkFieldType(p, "action.aggregate", a.Aggregate, "string")
		r.checkFieldType(p, "action.sequence", a.Sequence, "integer")
	}
	if a.URL != "" && a.URLEnv != "" {
		p.add("action.url", "set at most one of url and urlEnv", "give the downstream URL, or the env var that holds it, or neither to send the events to the handler ("+settings.HandlerURL+")")
	}
	if a.URL != "" {
		if u, err := url.Parse(a.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			p.add("action.url", fmt.Sprintf("%q is not an http(s) URL", a.URL), "use https://host/path")
		}
	}
	a.MaxAttempts = cmp.Or(a.MaxAttempts, DefaultActionMaxAttempts)
	if a.MaxAttempts < 1 || a.MaxAttempts > 100 {
		p.add("action.maxAttempts", fmt.Sprintf("%d is out of range", a.MaxAttempts), "use 1-100")
	}
	a.Timeout = cmp.Or(a.Timeout, Duration(DefaultActionTimeout))
	a.LeaseTTL = cmp.Or(a.LeaseTTL, Duration(DefaultLeaseTTL))
	a.Heartbeat = cmp.Or(a.Heartbeat, a.LeaseTTL/5)
	if a.Timeout < 0 || a.LeaseTTL < 0 || a.Heartbeat < 0 {
		p.add("action", "negative duration", "use positive durations such as 30s")
	}
	if a.Heartbeat >= a.LeaseTTL {
		p.add("action.heartbeat", "heartbeat must be shorter than leaseTTL", "extend the lease well before it expires, e.g. leaseTTL/5")
	}
}

// ToHandler reports whether a receipt route names the handler: a callback
// route without a target of its own (no target collection or id) sends each
// callback, once per idempotency key, to the team's handler container
// (EVENTPIPE_HANDLER_URL; see docs/handlers.md) instead of writing a
// document.
func (r *Route) ToHandler() bool { return r.Mode == ModeReceipt && r.Target == (Target{}) }

// ToHandler reports whether the action names the handler: a lease route
// without a URL of its own sends its events to the team's handler container
// (EVENTPIPE_HANDLER_URL; see docs/handlers.md).
func (a *Action) ToHandler() bool { return a.URL == "" && a.URLEnv == "" }

// ActionURL resolves the downstream URL of a lease route from its url or
// the environment variable it names (lookup is os.LookupEnv in production).
// A handler action (ToHandler) has no URL of its own: an error.
func (a *Action) ActionURL(lookup func(string) (string, bool)) (string, error) {
	if a.ToHandler() {
		return "", fmt.Errorf("action URL: the action has neither url nor urlEnv: it sends its events to the handler (%s)", settings.HandlerURL)
	}
	if a.URL != "" {
		return a.URL, nil
	}
	v, ok := lookup(a.URLEnv)
	if !ok || v == "" {
		return "", fmt.Errorf("action URL: environment variable %s is not set (fix: set it to the downstream URL)", a.URLEnv)
	}
	if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("action URL: %s=%q is not an http(s) URL", a.URLEnv, v)
	}
	return v, nil
}
