package spec

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
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
	return []string{KeyProject, KeyProjectNumber, KeyRegion, KeyEnv, KeyStore, KeyNotificationChannels, KeyDefaults, KeyPipelines, KeyAlerts, KeyManageAPIs}
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
		if !ok || contains(knownKeys(), name) {
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
	validate(c, s)
	return s, c.errors()
}

// Validate completes s with every default and checks every value, the way
// Load does after reading a stack file; a Pulumi component validating its
// own arguments builds a Stack from them and calls it. It returns Errors
// listing every problem, or nil.
func Validate(s *Stack) error {
	c := &collector{}
	validate(c, s)
	return c.err()
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

// decodeJSON checks the shape of a structured key strictly (unknown fields,
// wrong types), then decodes it into dst.
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
	// Values of the wrong shape are reported and dropped, so validation still
	// reports every other problem (and treats dropped values as unset).
	if !checkShape(c, "", full, raw, reflect.TypeOf(dst).Elem()) {
		return
	}
	if err := assign(raw, reflect.ValueOf(dst).Elem()); err != nil {
		c.add("", full, shorten(text), "a value of the documented shape", err.Error())
	}
}

var (
	durationType    = reflect.TypeOf(Duration{})
	rawMessageType  = reflect.TypeOf(json.RawMessage(nil))
	stringInputType = reflect.TypeOf((*pulumi.StringInput)(nil)).Elem()
	unmarshalerType = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()
)

// assign stores raw, a decoded JSON value checkShape accepted, in v, as
// json.Unmarshal does (into what v already holds): keys by their `json` names, a string into a pulumi.StringInput as pulumi.String,
// and a type decoding itself (Duration, json.RawMessage) through its
// UnmarshalJSON.
func assign(raw any, v reflect.Value) error {
	if raw == nil {
		return nil
	}
	if v.Kind() != reflect.Pointer && v.Addr().Type().Implements(unmarshalerType) {
		b, err := json.Marshal(raw)
		if err != nil {
			return err
		}
		return v.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(b)
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		return assign(raw, v.Elem())
	case reflect.Interface:
		if v.Type() != stringInputType {
			return fmt.Errorf("cannot decode into %s", v.Type())
		}
		v.Set(reflect.ValueOf(pulumi.String(raw.(string))))
	case reflect.Struct:
		fields := fieldsByName(v.Type())
		obj := raw.(map[string]any)
		for _, k := range SortedKeys(obj) {
			if err := assign(obj[k], v.FieldByIndex(fields[k].Index)); err != nil {
				return err
			}
		}
	case reflect.Map:
		obj := raw.(map[string]any)
		if v.IsNil() {
			v.Set(reflect.MakeMapWithSize(v.Type(), len(obj)))
		}
		for _, k := range SortedKeys(obj) {
			elem := reflect.New(v.Type().Elem()).Elem()
			if err := assign(obj[k], elem); err != nil {
				return err
			}
			v.SetMapIndex(reflect.ValueOf(k), elem)
		}
	case reflect.Slice:
		arr := raw.([]any)
		list := reflect.MakeSlice(v.Type(), len(arr), len(arr))
		for i, x := range arr {
			if err := assign(x, list.Index(i)); err != nil {
				return err
			}
		}
		v.Set(list)
	case reflect.String:
		v.SetString(raw.(string))
	case reflect.Bool:
		v.SetBool(raw.(bool))
	case reflect.Int:
		v.SetInt(int64(raw.(float64)))
	case reflect.Float64:
		v.SetFloat(raw.(float64))
	default:
		return fmt.Errorf("cannot decode into %s", v.Type())
	}
	return nil
}

// checkShape walks raw against type t and reports every unknown key and
// every value of the wrong JSON type, with its full path. It deletes bad
// entries from objects and returns false when raw itself is unusable.
func checkShape(c *collector, pipeline, path string, raw any, t reflect.Type) bool {
	if raw == nil {
		return true
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == rawMessageType {
		// Read and checked by its owner (see Decode); here only its kind.
		if _, ok := raw.(map[string]any); !ok {
			c.add(pipeline, path, jsonText(raw), "an object", "write the value as a YAML mapping")
			return false
		}
		return true
	}
	if t == stringInputType {
		t = reflect.TypeOf("") // a stack file's value is a string
	}
	if t == durationType {
		if _, ok := raw.(string); !ok {
			c.add(pipeline, path, jsonText(raw), "a duration string such as \"10s\", \"10m\" or \"14d\"", "quote the value and give it a unit")
			return false
		}
		return true
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := raw.(map[string]any)
		if !ok {
			c.add(pipeline, path, jsonText(raw), "an object with the keys "+strings.Join(fieldNames(t), ", "), "write the value as a YAML mapping")
			return false
		}
		fields := fieldsByName(t)
		for _, k := range SortedKeys(obj) {
			f, ok := fields[k]
			if !ok {
				c.add(pipeline, path+"."+k, jsonText(obj[k]), "the keys "+strings.Join(fieldNames(t), ", "),
					"remove the key or correct the spelling"+suggest(k, fieldNames(t)))
				delete(obj, k)
				continue
			}
			if !checkShape(c, pipeline, path+"."+k, obj[k], f.Type) {
				delete(obj, k)
			}
		}
	case reflect.Map:
		obj, ok := raw.(map[string]any)
		if !ok {
			c.add(pipeline, path, jsonText(raw), "a mapping keyed by name", "write the value as a YAML mapping of name: settings")
			return false
		}
		for _, k := range SortedKeys(obj) {
			p := pipeline
			if t.Elem() == reflect.TypeOf(&Pipeline{}) {
				p = k
			}
			if !checkShape(c, p, path+"."+k, obj[k], t.Elem()) {
				delete(obj, k)
			}
		}
	case reflect.Slice:
		arr, ok := raw.([]any)
		if !ok {
			c.add(pipeline, path, jsonText(raw), "a list", "write the value as a YAML list")
			return false
		}
		ok = true
		for i, v := range arr {
			ok = checkShape(c, pipeline, fmt.Sprintf("%s[%d]", path, i), v, t.Elem()) && ok
		}
		return ok
	case reflect.String:
		if _, ok := raw.(string); !ok {
			c.add(pipeline, path, jsonText(raw), "a string", "quote the value")
			return false
		}
	case reflect.Float64:
		if _, ok := raw.(float64); !ok {
			c.add(pipeline, path, jsonText(raw), "a number", "write the number without quotes; fractions as 0.01, not 1%")
			return false
		}
	case reflect.Bool:
		if _, ok := raw.(bool); !ok {
			c.add(pipeline, path, jsonText(raw), "true or false", "write true or false without quotes")
			return false
		}
	case reflect.Int:
		n, ok := raw.(float64)
		if !ok || n != float64(int64(n)) {
			c.add(pipeline, path, jsonText(raw), "a whole number", "write a whole number without quotes")
			return false
		}
	}
	return true
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

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// SortedKeys returns the keys of m in order; everything eventpipe declares or
// prints iterates maps this way, so output is deterministic.
func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// suggest returns ` (did you mean "x"?)` for the closest candidate, if close.
func suggest(got string, candidates []string) string {
	best, bestDist := "", 4
	for _, cand := range candidates {
		if d := editDistance(strings.ToLower(got), strings.ToLower(cand)); d < bestDist {
			best, bestDist = cand, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
