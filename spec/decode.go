package spec

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/eventpipe/eventpipe/internal/spelling"
)

// OfflineSecret is the value an offline reader (the renderer) supplies for a
// secure config value it cannot decrypt. Validation accepts it in place of a
// secret's real value, and the plan shows it as Pulumi does: "[secret]".
const OfflineSecret = "[secret]"

// Source gives access to one stack's config, the way the Pulumi engine hands
// it to a program: keys are namespaced ("eventpipe:pipelines") and
// structured values are JSON text.
type Source interface {
	// Get returns the value of key and whether it is set.
	Get(key string) (string, bool)
	// Secret reports whether key came from a secure value.
	Secret(key string) bool
	// Keys lists every key set in the stack, or nil when the caller cannot
	// enumerate them (unknown top-level keys are then not detected).
	Keys() []string
}

// MapSource is a Source over plain maps.
type MapSource struct {
	// Values are config values by namespaced key.
	Values map[string]string
	// Secrets marks the keys whose values are secret.
	Secrets map[string]bool
}

// Get implements Source.
func (m MapSource) Get(key string) (string, bool) { v, ok := m.Values[key]; return v, ok }

// Secret implements Source.
func (m MapSource) Secret(key string) bool { return m.Secrets[key] }

// Keys implements Source.
func (m MapSource) Keys() []string { return SortedKeys(m.Values) }

// knownKeys are the accepted eventpipe: keys and what each holds.
func knownKeys() []string {
	return []string{KeyProject, KeyProjectNumber, KeyRegion, KeyEnv, KeyStore, KeyNotificationChannels, KeyDefaults, KeyPipelines, KeyAlerts, KeyManageAPIs, KeySetup}
}

// Load reads, completes and validates the stack config of stack from src.
// It returns Errors listing every problem when anything is invalid; no
// partially valid Stack is returned.
func Load(stack string, src Source) (*Stack, error) {
	s, errs := Read(stack, src)
	if errs != nil {
		return nil, errs
	}
	return s, nil
}

// Read is Load that also returns the stack when it has errors, as far as it
// could be read and completed, so a caller checking more of it (the alert
// thresholds, which the alerts package owns) can report every problem at
// once. Errors is nil when the stack is valid.
func Read(stack string, src Source) (*Stack, Errors) {
	c := &collector{}
	s := &Stack{Name: stack}
	for _, key := range src.Keys() {
		name, ok := strings.CutPrefix(key, Namespace+":")
		if !ok || slices.Contains(knownKeys(), name) {
			continue
		}
		c.add("", key, "(set)", "the keys "+strings.Join(qualify(knownKeys()), ", "),
			"remove it or correct the spelling"+suggest(name, knownKeys()))
	}
	str := func(key string) string {
		v, _ := src.Get(Namespace + ":" + key)
		return v
	}
	s.Project = str(KeyProject)
	s.ProjectNumber = str(KeyProjectNumber)
	s.Region = str(KeyRegion)
	s.Env = str(KeyEnv)
	s.Store = str(KeyStore)
	s.StoreSecret = src.Secret(Namespace + ":" + KeyStore)
	decodeJSON(c, src, KeyNotificationChannels, &s.NotificationChannels)
	decodeJSON(c, src, KeyDefaults, &s.Defaults)
	decodeJSON(c, src, KeyPipelines, &s.Pipelines)
	decodeJSON(c, src, KeyAlerts, &s.Alerts)
	s.ManageAPIs = readBool(c, src, KeyManageAPIs)
	decodeJSON(c, src, KeySetup, &s.Setup)
	validate(c, s)
	return s, c.errors()
}

// Validate completes s with every default and checks every value, the way
// Load does after reading a stack file; a Pulumi component validating its
// own arguments builds a Stack from them and calls it. It returns every
// problem, or nil.
func Validate(s *Stack) Errors {
	c := &collector{}
	validate(c, s)
	return c.errors()
}

// Decode decodes the JSON text raw into dst, checking its shape the way stack
// config is checked (unknown keys with a suggestion, wrong types), every
// problem reported under path. Values of the wrong shape are left out; dst
// keeps what it held for them. The alert thresholds are read with it.
func Decode(path string, raw []byte, dst any) Errors {
	c := &collector{}
	decodeValue(c, path, string(raw), dst)
	return c.errors()
}

// decodeJSON decodes a structured key into dst, checking its shape
// strictly (unknown fields, wrong types).
func decodeJSON(c *collector, src Source, key string, dst any) {
	full := Namespace + ":" + key
	text, ok := src.Get(full)
	if !ok || strings.TrimSpace(text) == "" {
		return
	}
	if src.Secret(full) {
		// Pulumi marks the whole key secret, but eventpipe could not tell which
		// value to keep secret in the resources, so it would leak into state.
		c.add("", full, OfflineSecret, "secure values only in "+Namespace+":"+KeyStore,
			"remove the secure: value from "+full+"; put a secret store URL in eventpipe:store with `pulumi config set --secret eventpipe:store URL`")
	}
	decodeValue(c, full, text, dst)
}

// decodeValue checks the shape of the JSON text against dst's type and
// decodes what fits into dst.
func decodeValue(c *collector, full, text string, dst any) {
	var raw any
	if err := json.Unmarshal([]byte(text), &raw); err != nil {
		c.add("", full, shorten(text), "a structured YAML value (object or list)",
			"write the value as YAML under the key, not as a quoted string")
		return
	}
	decode(c, "", full, raw, reflect.ValueOf(dst).Elem())
}

var (
	rawMessageType  = reflect.TypeOf(json.RawMessage(nil))
	pipelineType    = reflect.TypeOf(&Pipeline{})
	stringInputType = reflect.TypeOf((*pulumi.StringInput)(nil)).Elem()
)

// decode stores raw, a decoded JSON value, in v as json.Unmarshal does
// (into what v already holds, keys by their `json` names; a list replaces
// the one held), and a string into a pulumi.StringInput as pulumi.String.
// Every unknown key and every value of the wrong JSON type is reported with
// its full path and left out, so validation still reports every other
// problem (and treats it as unset); a list with a bad element is left out
// whole. It returns false when raw itself is left out.
func decode(c *collector, pipeline, path string, raw any, v reflect.Value) bool {
	if raw == nil {
		return true
	}
	t := v.Type()
	bad := func(allowed, fix string) bool {
		c.add(pipeline, path, jsonText(raw), allowed, fix)
		return false
	}
	switch {
	case t.Kind() == reflect.Pointer:
		elem := v
		if v.IsNil() {
			elem = reflect.New(t.Elem())
		}
		if !decode(c, pipeline, path, raw, elem.Elem()) {
			return false
		}
		v.Set(elem)
	case t == rawMessageType:
		// Read and checked by its owner (see Decode); here only its kind.
		if _, ok := raw.(map[string]any); !ok {
			return bad("an object", "write the value as a YAML mapping")
		}
		b, _ := json.Marshal(raw) // decoded JSON, so it encodes
		v.SetBytes(b)
	case t.Kind() == reflect.Struct:
		obj, ok := raw.(map[string]any)
		if !ok {
			return bad("an object with the keys "+strings.Join(fieldNames(t), ", "), "write the value as a YAML mapping")
		}
		fields := fieldsByName(t)
		for _, k := range SortedKeys(obj) {
			if f, ok := fields[k]; ok {
				decode(c, pipeline, path+"."+k, obj[k], v.FieldByIndex(f.Index))
				continue
			}
			c.add(pipeline, path+"."+k, jsonText(obj[k]), "the keys "+strings.Join(fieldNames(t), ", "),
				"remove the key or correct the spelling"+suggest(k, fieldNames(t)))
		}
	case t.Kind() == reflect.Map:
		obj, ok := raw.(map[string]any)
		if !ok {
			return bad("a mapping keyed by name", "write the value as a YAML mapping of name: settings")
		}
		if v.IsNil() {
			v.Set(reflect.MakeMapWithSize(t, len(obj)))
		}
		for _, k := range SortedKeys(obj) {
			p := pipeline
			if t.Elem() == pipelineType {
				p = k
			}
			if elem := reflect.New(t.Elem()).Elem(); decode(c, p, path+"."+k, obj[k], elem) {
				v.SetMapIndex(reflect.ValueOf(k), elem)
			}
		}
	case t.Kind() == reflect.Slice:
		arr, ok := raw.([]any)
		if !ok {
			return bad("a list", "write the value as a YAML list")
		}
		list := reflect.MakeSlice(t, len(arr), len(arr))
		for i, x := range arr {
			ok = decode(c, pipeline, fmt.Sprintf("%s[%d]", path, i), x, list.Index(i)) && ok
		}
		if !ok {
			return false
		}
		v.Set(list)
	case t == stringInputType || t.Kind() == reflect.String: // a stack file's input is a string
		s, ok := raw.(string)
		switch {
		case !ok && boundKind(path) == Span:
			b, _ := BoundOf(strings.TrimPrefix(path, Namespace+":"))
			return bad(`a duration string such as "10s", "10m" or "14d", from `+b.Allowed(), "quote the value and give it a unit")
		case !ok:
			return bad("a string", "quote the value")
		}
		if t == stringInputType {
			v.Set(reflect.ValueOf(pulumi.String(s)))
		} else {
			v.SetString(s)
		}
	case t.Kind() == reflect.Float64:
		n, ok := raw.(float64)
		if !ok {
			return bad("a number", "write the number without quotes; fractions as 0.01, not 1%")
		}
		v.SetFloat(n)
	case t.Kind() == reflect.Bool:
		b, ok := raw.(bool)
		if !ok {
			return bad("true or false", "write true or false without quotes")
		}
		v.SetBool(b)
	case t.Kind() == reflect.Int:
		n, ok := raw.(float64)
		b, bounded := BoundOf(strings.TrimPrefix(path, Namespace+":"))
		if !bounded || b.Kind != Count {
			b = Bound{}
		}
		if !ok {
			n = math.NaN() // not a number: refused as one that is not whole
		}
		// Refused here: what no int holds. The range of one is validation's.
		if CountError(Bound{}, n) != nil {
			e := CountError(b, n)
			c.add(pipeline, path, jsonText(raw), e.Allowed, e.Fix)
			return false
		}
		v.SetInt(int64(n))
	default:
		return bad("a value of the documented shape", "cannot decode into "+t.String())
	}
	return true
}

// boundKind is how the setting at the stack config path is written when
// it is bounded (the bounds table has every duration setting), else -1.
func boundKind(path string) Kind {
	if b, ok := BoundOf(strings.TrimPrefix(path, Namespace+":")); ok {
		return b.Kind
	}
	return -1
}

// fieldsByName maps JSON names to struct fields (fields tagged "-" are not config).
func fieldsByName(t reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		out[name] = f
	}
	return out
}

func fieldNames(t reflect.Type) []string { return SortedKeys(fieldsByName(t)) }

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return shorten(string(b))
}

func shorten(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

func qualify(keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = Namespace + ":" + k
	}
	return out
}

// SortedKeys returns the keys of m in order; everything eventpipe declares or
// prints iterates maps this way, so output is deterministic.
func SortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// suggest returns ` (did you mean "x"?)` for the closest candidate, if close.
func suggest(got string, candidates []string) string {
	best, ok := spelling.Closest(got, candidates)
	if !ok {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}
