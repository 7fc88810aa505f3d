package spec_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/spec"
)

// remove marks a key to delete in set.
type removeKey struct{}

var remove = removeKey{}

// baseConfig is a small valid stack: one pipeline with a push and a pull subscription.
func baseConfig() map[string]any {
	return map[string]any{
		"eventpipe:project":       "acme-dev",
		"eventpipe:projectNumber": "123456789012",
		"eventpipe:pipelines": map[string]any{
			"orders": map[string]any{
				"consumer": map[string]any{"image": "europe-docker.pkg.dev/acme/eventpipe/consumer:1.2.3", "minInstances": 1},
				"subscriptions": map[string]any{
					"main": map[string]any{"delivery": "push"},
					"work": map[string]any{"delivery": "pull"},
				},
			},
		},
	}
}

// set changes cfg[key] at the dotted path inside it ("" sets the key itself).
func set(cfg map[string]any, key, path string, value any) {
	if path == "" {
		if value == remove {
			delete(cfg, key)
		} else {
			cfg[key] = value
		}
		return
	}
	parts := strings.Split(path, ".")
	m, _ := cfg[key].(map[string]any)
	if m == nil {
		m = map[string]any{}
		cfg[key] = m
	}
	for _, p := range parts[:len(parts)-1] {
		next, _ := m[p].(map[string]any)
		if next == nil {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	last := parts[len(parts)-1]
	if value == remove {
		delete(m, last)
	} else {
		m[last] = value
	}
}

// source turns a config map into the strings Pulumi passes a program.
func source(t *testing.T, cfg map[string]any) spec.MapSource {
	t.Helper()
	src := spec.MapSource{Values: map[string]string{}, Secrets: map[string]bool{}}
	for k, v := range cfg {
		if s, ok := v.(string); ok {
			src.Values[k] = s
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		src.Values[k] = string(b)
	}
	return src
}

// load validates cfg as stack "dev".
func load(t *testing.T, cfg map[string]any) (*spec.Stack, spec.Errors) {
	t.Helper()
	st, err := spec.Load("dev", source(t, cfg))
	if err == nil {
		return st, nil
	}
	errs, ok := err.(spec.Errors)
	if !ok {
		t.Fatalf("Load returned %T, want spec.Errors: %v", err, err)
	}
	if st != nil {
		t.Fatal("Load returned a stack together with errors")
	}
	return nil, errs
}
