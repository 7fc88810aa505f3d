package spec_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/eventpipe/eventpipe/spec"
)

// asPulumiReads is every structured key of the stack file text, decoded as the Pulumi CLI
// hands it to a program: yaml.v3 decodes the value (merge keys and all), the program reads
// it as JSON. ok is false when yaml.v3 or JSON cannot carry the file.
func asPulumiReads(text string) (map[string]any, bool) {
	var doc struct {
		Config map[string]any `yaml:"config"`
	}
	var top yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil || yaml.Unmarshal([]byte(text), &top) != nil ||
		len(top.Content) != 1 || top.Content[0].Kind != yaml.MappingNode {
		return nil, false // not a stack file's shape: its values are not the question
	}
	out := map[string]any{}
	for k, v := range doc.Config {
		switch v.(type) {
		case map[string]any, []any:
		default:
			continue // a top-level scalar reaches the program as its text
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, false
		}
		var back any
		if err := json.Unmarshal(raw, &back); err != nil {
			return nil, false
		}
		if !strings.Contains(k, ":") {
			k = spec.Namespace + ":" + k
		}
		out[k] = back
	}
	return out, true
}

// checkReadsAsPulumi asserts the property: every structured key of a stack file that has
// no secure value reaches render and check (spec.ParseStackFile) as it reaches the program
// under `pulumi up`.
func checkReadsAsPulumi(t *testing.T, text string) {
	t.Helper()
	want, ok := asPulumiReads(text)
	if !ok {
		return
	}
	f, err := spec.ParseStackFile("Pulumi.prod.yaml", []byte(text))
	if err != nil {
		t.Fatalf("ParseStackFile refuses a file the Pulumi CLI reads: %v\n%s", err, text)
	}
	for k, w := range want {
		if f.Source.Secrets[k] {
			continue
		}
		var got any
		if err := json.Unmarshal([]byte(f.Source.Values[k]), &got); err != nil || !reflect.DeepEqual(got, w) {
			t.Fatalf("%s reads as %s, the Pulumi CLI as %v (%v)\n%s", k, f.Source.Values[k], w, err, text)
		}
	}
}

// mergeStacks are stack files that share settings with YAML anchors and merge keys, built
// from each merge shape (one alias, an inline mapping, a list where the first wins, a key
// written beside the merge that wins, a merge inside the merged mapping) around each
// bounded setting of a subscription.
func mergeStacks() []string {
	shapes := []string{
		"        a: &base\n          delivery: push\n          %[1]s: %[2]s\n        b:\n          <<: *base\n",
		"        a:\n          <<: {delivery: push, %[1]s: %[2]s}\n",
		"        a: &one\n          delivery: push\n          %[1]s: %[2]s\n        x: &two\n          delivery: pull\n          %[1]s: null\n        b:\n          <<: [*one, *two]\n        c:\n          <<: [*two, *one]\n",
		"        a: &base\n          delivery: push\n          %[1]s: %[2]s\n        b:\n          <<: *base\n          %[1]s: null\n          delivery: pull\n",
		"        a: &inner\n          %[1]s: %[2]s\n        b: &outer\n          <<: *inner\n          delivery: push\n        c:\n          <<: *outer\n",
	}
	var out []string
	for _, b := range spec.Bounds() {
		key, ok := strings.CutPrefix(b.Path, "pipelines.*.subscriptions.*.")
		if !ok || strings.Contains(key, ".") {
			continue
		}
		value := "7"
		if b.Kind == spec.Span {
			value = fmt.Sprintf("%q", b.Format(b.Max))
		}
		for _, shape := range shapes {
			out = append(out, "config:\n  eventpipe:pipelines:\n    orders:\n      subscriptions:\n"+fmt.Sprintf(shape, key, value))
		}
	}
	return out
}

// TestStackFileReadsAsPulumi: stack files with anchors and merge keys reach render and
// check as they reach the program under `pulumi up`. The case that broke: `<<: *sub` under a
// subscription was refused as an unknown key "<<", so `eventpipe check` failed a stack
// `pulumi up` deploys.
func TestStackFileReadsAsPulumi(t *testing.T) {
	stacks := mergeStacks()
	if len(stacks) == 0 {
		t.Fatal("no merge stacks")
	}
	for _, text := range stacks {
		checkReadsAsPulumi(t, text)
	}
}

// FuzzStackFileReadsAsPulumi is TestStackFileReadsAsPulumi on any text.
func FuzzStackFileReadsAsPulumi(f *testing.F) {
	for _, s := range mergeStacks() {
		f.Add(s)
	}
	f.Add("config:\n  eventpipe:defaults: {maxDeliveryAttempts: 5.0, minBackoff: 10s}\n")
	f.Add("config:\n  x: &a {k: 1}\n  eventpipe:alerts: {<<: *a, j: [1, 2.5, 0x10, .inf]}\n")
	f.Fuzz(checkReadsAsPulumi)
}
