package tffixtures

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Timestamp is the time every normalised plan says it was made.
const Timestamp = "2000-01-01T00:00:00Z"

// Normalise rewrites what differs between two `terraform show -json` (or `tofu show
// -json`) runs on the same plan: the top-level "timestamp" becomes Timestamp, and the
// lists the CLIs print in map order are sorted: "relevant_attributes", and the
// child_modules of module instances nested two deep or more in "planned_values" and
// "prior_state" (by address; those two are written again, with their keys in order).
// Every other byte is kept as the CLI printed it.
func Normalise(plan []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(plan))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		if err == nil {
			err = errors.New("it is not an object")
		}
		return nil, fmt.Errorf("reading the plan: %w", err)
	}
	var out bytes.Buffer
	out.WriteByte('{')
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("reading the plan: %w", err)
		}
		key, _ := tok.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, fmt.Errorf("reading the plan's %q: %w", key, err)
		}
		switch key {
		case "timestamp":
			value = json.RawMessage(`"` + Timestamp + `"`)
		case "relevant_attributes":
			if value, err = sortedAttributes(value); err != nil {
				return nil, err
			}
		case "planned_values", "prior_state":
			if value, err = sortedModules(key, value); err != nil {
				return nil, err
			}
		}
		if out.Len() > 1 {
			out.WriteByte(',')
		}
		name, _ := json.Marshal(key)
		out.Write(name)
		out.WriteByte(':')
		out.Write(value)
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("reading the plan: %w", err)
	}
	out.WriteByte('}')
	out.Write(plan[dec.InputOffset():]) // the CLI's closing newline
	return out.Bytes(), nil
}

// relevantAttribute is an element of a plan's relevant_attributes: an attribute of a
// resource whose change the plan's other changes depend on.
type relevantAttribute struct {
	Resource  string            `json:"resource"`
	Attribute []json.RawMessage `json:"attribute"`
}

// sortedAttributes sorts relevant_attributes by resource address, then attribute path.
func sortedAttributes(raw json.RawMessage) (json.RawMessage, error) {
	var attrs []relevantAttribute
	if err := json.Unmarshal(raw, &attrs); err != nil {
		return nil, fmt.Errorf("reading the plan's relevant_attributes: %w", err)
	}
	path := func(a relevantAttribute) string {
		var b bytes.Buffer
		for _, step := range a.Attribute {
			b.Write(step)
			b.WriteByte(0)
		}
		return b.String()
	}
	slices.SortStableFunc(attrs, func(x, y relevantAttribute) int {
		return cmp.Or(cmp.Compare(x.Resource, y.Resource), cmp.Compare(path(x), path(y)))
	})
	return json.Marshal(attrs)
}

// sortedModules sorts every child_modules list under raw by the modules' addresses.
func sortedModules(key string, raw json.RawMessage) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("reading the plan's %s: %w", key, err)
	}
	sortChildModules(v)
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("writing the plan's %s: %w", key, err)
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n")), nil
}

func sortChildModules(v any) {
	switch t := v.(type) {
	case map[string]any:
		if children, ok := t["child_modules"].([]any); ok {
			address := func(m any) string {
				a, _ := m.(map[string]any)["address"].(string)
				return a
			}
			slices.SortStableFunc(children, func(x, y any) int { return cmp.Compare(address(x), address(y)) })
		}
		for _, e := range t {
			sortChildModules(e)
		}
	case []any:
		for _, e := range t {
			sortChildModules(e)
		}
	}
}
