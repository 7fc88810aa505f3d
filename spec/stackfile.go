package spec

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/eventpipe/eventpipe/internal/fielderr"
)

// Location is a place in a stack config file (File, 1-based Line and Column);
// String renders file:line:column. It is the location of a FieldError.
type Location = fielderr.Location

// StackFile is a Pulumi stack config file (Pulumi.<stack>.yaml) read the way
// the Pulumi CLI hands it to a program, plus where each key was written.
type StackFile struct {
	// Path is the file that was read.
	Path string
	// Source holds the config values: structured values as JSON text, secure
	// values replaced by OfflineSecret and marked secret.
	Source MapSource
	// Locations maps config paths ("eventpipe:pipelines.orders.subscriptions.main")
	// to where they were written.
	Locations map[string]Location
}

// StackFilePath is where the config of stack lives in stackDir.
func StackFilePath(stackDir, stack string) string {
	return filepath.Join(stackDir, "Pulumi."+stack+".yaml")
}

// ReadStackFile reads a Pulumi stack config file. Keys without a namespace
// belong to the project (eventpipe), as the Pulumi CLI treats them.
func ReadStackFile(path string) (*StackFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read stack config: %w", err)
	}
	return ParseStackFile(path, data)
}

// ParseStackFile parses the content of a stack config file named path.
func ParseStackFile(path string, data []byte) (*StackFile, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("parse stack config %s: %w", path, err)
	}
	f := &StackFile{
		Path:      path,
		Source:    MapSource{Values: map[string]string{}, Secrets: map[string]bool{}},
		Locations: map[string]Location{},
	}
	if len(doc.Content) == 0 {
		return f, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("stack config %s: top level must be a mapping with a config: key", path)
	}
	if err := refuseDuplicateKeys(path, "", root); err != nil {
		return nil, err
	}
	var cfg *yaml.Node
	var stray []string
	strayLine := 0
	for i := 0; i+1 < len(root.Content); i += 2 {
		k := root.Content[i]
		switch {
		case k.Value == "config":
			cfg = root.Content[i+1]
		case !slices.Contains(stackFileKeys(), k.Value):
			stray = append(stray, k.Value)
			if strayLine == 0 {
				strayLine = k.Line
			}
		}
	}
	if len(stray) > 0 {
		hint := "put them under config:"
		for i := 0; i+1 < len(root.Content); i += 2 {
			k, v := root.Content[i], root.Content[i+1]
			if k.Value == Namespace && v.Kind == yaml.MappingNode && len(v.Content) > 0 {
				// eventpipe: is a namespace, not a key: its keys are written eventpipe:KEY.
				hint = fmt.Sprintf("put them under config:, each %s key as %s:KEY (config:\n  %s:%s: …)", Namespace, Namespace, Namespace, v.Content[0].Value)
			}
		}
		return nil, fmt.Errorf("stack config %s:%d: %s at the top level: a stack's settings are read only under config:, so %s (the keys of a stack file are %s)",
			path, strayLine, strings.Join(stray, ", "), hint, strings.Join(stackFileKeys(), ", "))
	}
	if cfg == nil || cfg.Kind == yaml.ScalarNode && cfg.ShortTag() == "!!null" { // config: with nothing, as pulumi reads it
		return f, nil
	}
	if cfg.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("stack config %s:%d: config: must be a mapping", path, cfg.Line)
	}
	for i := 0; i+1 < len(cfg.Content); i += 2 {
		k, v := cfg.Content[i], cfg.Content[i+1]
		key := k.Value
		if !strings.Contains(key, ":") {
			key = Namespace + ":" + key
		}
		if at, dup := f.Locations[key]; dup {
			return nil, fmt.Errorf("stack config %s:%d: config key %q names %s, already set at line %d: keep one of them", path, k.Line, k.Value, key, at.Line)
		}
		f.Locations[key] = Location{File: path, Line: k.Line, Column: k.Column}
		secret := false
		val, err := f.toValue(key, v, &secret)
		if err != nil {
			return nil, err
		}
		// A Pulumi program reads a structured value as JSON text.
		text, isText := val.(string)
		if !isText {
			b, err := json.Marshal(val)
			if err != nil {
				return nil, fmt.Errorf("stack config %s: encode %s: %w", path, key, err)
			}
			text = string(b)
		}
		f.Source.Values[key] = text
		if secret {
			f.Source.Secrets[key] = true
		}
	}
	return f, nil
}

// stackFileKeys are the top-level keys of a Pulumi stack file; the stack's settings are
// under config.
func stackFileKeys() []string {
	return []string{"config", "environment", "secretsprovider", "encryptedkey", "encryptionsalt"}
}

// refuseDuplicateKeys fails on a key written twice in one mapping of n (path names n),
// as the Pulumi CLI refuses such a file ("mapping key already defined"); yaml.v3 keeps
// the last one when it decodes into a node. Aliases are not followed: their mappings are
// checked where they are written.
func refuseDuplicateKeys(file, path string, n *yaml.Node) error {
	switch n.Kind {
	case yaml.MappingNode:
		seen := make(map[string]int, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			p := k.Value
			if path != "" {
				p = path + "." + k.Value
			}
			if line, dup := seen[k.Value]; dup {
				return fmt.Errorf("stack config %s:%d: %s: key %q is already defined at line %d (the Pulumi CLI refuses the file: mapping key already defined); keep one of them", file, k.Line, p, k.Value, line)
			}
			seen[k.Value] = k.Line
			if err := refuseDuplicateKeys(file, p, n.Content[i+1]); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		for i, item := range n.Content {
			if err := refuseDuplicateKeys(file, fmt.Sprintf("%s[%d]", path, i), item); err != nil {
				return err
			}
		}
	}
	return nil
}

// toValue converts a YAML node to JSON-able data, recording key locations
// under path and replacing {secure: …} values by OfflineSecret.
func (f *StackFile) toValue(path string, n *yaml.Node, secret *bool) (any, error) {
	switch n.Kind {
	case yaml.AliasNode:
		return f.toValue(path, n.Alias, secret)
	case yaml.MappingNode:
		if len(n.Content) == 2 && n.Content[0].Value == "secure" {
			*secret = true
			return OfflineSecret, nil
		}
		out := make(map[string]any, len(n.Content)/2)
		// Merge keys (<<: *anchor) as yaml.v3, and so the Pulumi CLI, reads them: the
		// mappings merged in first, the first of a list winning, then the keys written here.
		merged, err := f.merged(path, n, secret)
		if err != nil {
			return nil, err
		}
		for _, m := range merged {
			maps.Copy(out, m)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if isMerge(k) {
				continue
			}
			p := path + "." + k.Value
			f.Locations[p] = Location{File: f.Path, Line: k.Line, Column: k.Column}
			v, err := f.toValue(p, n.Content[i+1], secret)
			if err != nil {
				return nil, err
			}
			out[k.Value] = v
		}
		return out, nil
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for i, item := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			f.Locations[p] = Location{File: f.Path, Line: item.Line, Column: item.Column}
			v, err := f.toValue(p, item, secret)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.ScalarNode:
		if !strings.ContainsAny(path, ".[") || n.Tag == "!!str" {
			// Top-level scalars reach a Pulumi program as their text.
			return n.Value, nil
		}
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("stack config %s:%d: %s: %w", f.Path, n.Line, path, err)
		}
		if x, ok := v.(float64); ok && (math.IsInf(x, 0) || math.IsNaN(x)) {
			// A Pulumi program reads the value as JSON, which has no such number.
			return nil, fmt.Errorf("stack config %s:%d: %s = %s: allowed a finite number; fix: write the number itself", f.Path, n.Line, path, n.Value)
		}
		return v, nil
	}
	return nil, fmt.Errorf("stack config %s:%d: %s: unsupported YAML node", f.Path, n.Line, path)
}

// merged are the mappings the merge keys of mapping n bring in, read as values at path,
// in the order they apply: each overrides the ones before it.
func (f *StackFile) merged(path string, n *yaml.Node, secret *bool) ([]map[string]any, error) {
	var sources []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		if !isMerge(n.Content[i]) {
			continue
		}
		v := n.Content[i+1]
		if v.Kind == yaml.SequenceNode {
			sources = append(sources, v.Content...)
		} else {
			sources = append(sources, v)
		}
	}
	var out []map[string]any
	for _, src := range slices.Backward(sources) {
		v, err := f.toValue(path, src, secret)
		m, ok := v.(map[string]any)
		switch {
		case err != nil:
			return nil, err
		case !ok:
			return nil, fmt.Errorf("stack config %s:%d: %s: << merges mappings (<<: *anchor or <<: [*a, *b]); fix: point it at a mapping", f.Path, src.Line, path)
		}
		out = append(out, m)
	}
	return out, nil
}

// isMerge reports whether k is a YAML merge key, as yaml.v3 decides.
func isMerge(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.Value == "<<" && (k.Tag == "" || k.Tag == "!" || k.ShortTag() == "!!merge")
}

// Locate returns where path, or its closest written ancestor, is in the file.
func (f *StackFile) Locate(path string) (Location, bool) {
	for p := path; p != ""; {
		if loc, ok := f.Locations[p]; ok {
			return loc, true
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return Location{}, false
}

// Load validates the file's config for stack; every error carries its file
// location when one is known.
func (f *StackFile) Load(stack string) (*Stack, error) {
	s, err := Load(stack, f.Source)
	if errs, ok := err.(Errors); ok {
		return nil, f.Place(errs)
	}
	return s, err
}

// Place gives every error of errs the file location of its path, when
// known, and orders them by line.
func (f *StackFile) Place(errs Errors) Errors {
	for i := range errs {
		if loc, found := f.Locate(errs[i].Path); found {
			errs[i].Location = loc
		}
	}
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Location.Line < errs[j].Location.Line })
	return errs
}
