package devpipe_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/eventpipe/eventpipe/devpipe"
	"github.com/eventpipe/eventpipe/spec"
)

// TestForPstest: every subscription retention a stack can declare is mapped
// into pstest's 10m–7d, values pstest accepts are kept, and exactly the
// changed ones are reported, in one line naming the values.
func TestForPstest(t *testing.T) {
	var retentions []time.Duration
	for d := spec.MinRetention; d <= spec.MaxRetention; d += 12 * time.Hour {
		retentions = append(retentions, d)
	}
	retentions = append(retentions, spec.MaxRetention, 7*spec.Day, 7*spec.Day+time.Second)
	for _, r := range retentions {
		for _, dlq := range []time.Duration{spec.MinDLQRetention, spec.DefaultDLQRetention, spec.MaxDLQRetention} {
			in := devpipe.Topology{Project: "orders", Pipelines: []devpipe.PipelineTopology{{Name: "orders", Topic: "projects/p/topics/orders",
				Subscriptions: []devpipe.SubscriptionTopology{{Name: "projects/p/subscriptions/orders-main", Retention: r, DLQRetention: dlq,
					MaxAttempts: 5, DLQSubscription: "projects/p/subscriptions/orders-main.dlq-sub"}}}}}
			out, adapted := devpipe.ForPstest(in)
			got := out.Pipelines[0].Subscriptions[0]
			want := 0
			for _, c := range []struct{ stack, local time.Duration }{{r, got.Retention}, {dlq, got.DLQRetention}} {
				if c.local < 10*time.Minute || c.local > 7*spec.Day {
					t.Errorf("retention %v declared as %v, outside pstest's 10m–7d", c.stack, c.local)
				}
				if c.stack <= 7*spec.Day && c.local != c.stack {
					t.Errorf("retention %v pstest accepts was changed to %v", c.stack, c.local)
				}
				if c.local != c.stack {
					want++
				}
			}
			if len(adapted) != want {
				t.Errorf("retention %v, DLQ %v: %d adaptations reported, want %d: %+v", r, dlq, len(adapted), want, adapted)
			}
			line := devpipe.AdaptationLine(adapted)
			if (line == "") != (want == 0) || strings.Contains(line, "\n") {
				t.Errorf("retention %v, DLQ %v: line %q", r, dlq, line)
			}
			for _, a := range adapted {
				if !strings.Contains(line, a.Stack) {
					t.Errorf("line %q does not name the stack's %v", line, a.Stack)
				}
			}
			if in.Pipelines[0].Subscriptions[0].Retention != r {
				t.Errorf("ForPstest changed its input")
			}
		}
	}
}

// boundedSetting is one key of docs/configuration.md with a numeric range.
type boundedSetting struct {
	section, key, lo, hi string
}

// sectionPaths places the documented sections in a one-pipeline stack:
// where the key goes under config.
var sectionPaths = map[string][]string{
	"eventpipe:defaults":              {"eventpipe:defaults"},
	"eventpipe:pipelines.<name>":      {"eventpipe:pipelines", "orders"},
	"…<name>.topic":                   {"eventpipe:pipelines", "orders", "topic"},
	"…<name>.consumer":                {"eventpipe:pipelines", "orders", "consumer"},
	"…<name>.subscriptions.<key>":     {"eventpipe:pipelines", "orders", "subscriptions", "main"},
	"…subscriptions.<key>.deadLetter": {"eventpipe:pipelines", "orders", "subscriptions", "main", "deadLetter"},
}

// boundedSettings reads every integer or duration key with a documented
// range (LO–HI) from docs/configuration.md, which is generated from the
// config types: a new bounded key is covered without editing this test.
func boundedSettings(t *testing.T) []boundedSetting {
	t.Helper()
	doc, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	heading := regexp.MustCompile("^## `([^`]+)`")
	row := regexp.MustCompile("^\\| `(\\w+)` \\| (integer|duration) \\| [^|]*?\\(([0-9]+[a-z]*)–([0-9]+[a-z]*)[ ,;)]")
	var out []boundedSetting
	section := ""
	for _, l := range strings.Split(string(doc), "\n") {
		if m := heading.FindStringSubmatch(l); m != nil {
			section = m[1]
			continue
		}
		m := row.FindStringSubmatch(l)
		if m == nil || strings.HasPrefix(section, "eventpipe:alerts") || strings.Contains(section, ".alerts") {
			continue // alert thresholds declare no Pub/Sub or consumer setting
		}
		if _, ok := sectionPaths[section]; !ok {
			t.Fatalf("docs/configuration.md: bounded key %s in section %q, which this test cannot place; add it to sectionPaths", m[1], section)
		}
		out = append(out, boundedSetting{section: section, key: m[1], lo: m[3], hi: m[4]})
	}
	if len(out) < 15 {
		t.Fatalf("found only %d bounded settings in docs/configuration.md: %+v", len(out), out)
	}
	return out
}

// stackYAML is a one-pipeline stack with one subscription of delivery,
// and set applied on top (path -> value).
func stackYAML(t *testing.T, delivery string, set map[string]any) []byte {
	t.Helper()
	cfg := map[string]any{
		"eventpipe:project": "acme-prod", "eventpipe:projectNumber": "123456789012",
		"eventpipe:pipelines": map[string]any{"orders": map[string]any{
			"consumer":      map[string]any{"image": "europe-west1-docker.pkg.dev/acme-prod/eventpipe/consumer:1.0.0"},
			"subscriptions": map[string]any{"main": map[string]any{"delivery": delivery}},
		}},
	}
	if delivery == "pull" { // a pull consumer keeps an instance (the case may override it)
		cfg["eventpipe:pipelines"].(map[string]any)["orders"].(map[string]any)["consumer"].(map[string]any)["minInstances"] = 1
	}
	for path, v := range set {
		keys := strings.Split(path, "\x00")
		m := cfg
		for _, k := range keys[:len(keys)-1] {
			next, ok := m[k].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[k] = next
			}
			m = next
		}
		m[keys[len(keys)-1]] = v
	}
	b, err := yaml.Marshal(map[string]any{"config": cfg})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// yamlValue is a documented bound as the stack file writes it.
func yamlValue(v string) any {
	var n int
	if _, err := fmt.Sscanf(v, "%d", &n); err == nil && fmt.Sprint(n) == v {
		return n // integers, and "0" for a duration, which the config accepts as 0s
	}
	return v
}

// within reports whether the documented value v lies in [lo, hi].
func within(t *testing.T, v, lo, hi string) bool {
	t.Helper()
	num := func(s string) float64 {
		if d, err := spec.ParseDuration(s); err == nil {
			return float64(d)
		}
		var n float64
		if _, err := fmt.Sscanf(s, "%g", &n); err != nil {
			t.Fatalf("bound %q is neither a duration nor a number", s)
		}
		return n
	}
	return num(lo) <= num(v) && num(v) <= num(hi)
}

// TestEveryBoundedSettingStarts is the property behind `eventpipe dev` on
// any stack: for every bounded key the stack config accepts, at its lower
// and at its upper bound, the local pipeline starts (pstest accepts the
// declared topology). A min/max pair moves together so the bound is
// reachable (when the partner's own range allows it); a value is tried on a push and on a pull subscription and must
// be valid on at least one of them.
func TestEveryBoundedSettingStarts(t *testing.T) {
	settings := boundedSettings(t)
	for _, s := range settings {
		for _, bound := range []string{s.lo, s.hi} {
			t.Run(s.section+"."+s.key+"="+bound, func(t *testing.T) {
				set := map[string]any{}
				base := strings.Join(sectionPaths[s.section], "\x00") + "\x00"
				set[base+s.key] = yamlValue(bound)
				for _, pair := range [][2]string{{"min", "max"}, {"max", "min"}} {
					rest, ok := strings.CutPrefix(s.key, pair[0])
					if !ok {
						continue
					}
					for _, o := range settings {
						if o.section == s.section && o.key == pair[1]+rest && within(t, bound, o.lo, o.hi) {
							set[base+o.key] = yamlValue(bound)
						}
					}
				}
				var errs []string
				started := 0
				for _, delivery := range []string{"push", "pull"} {
					file, err := spec.ParseStackFile("bound.yaml", stackYAML(t, delivery, set))
					if err != nil {
						t.Fatal(err)
					}
					st, err := file.Load("bound")
					if err != nil {
						errs = append(errs, delivery+": "+err.Error())
						continue
					}
					env, err := devpipe.Start(context.Background(), devpipe.Options{Stack: st, DataDir: t.TempDir(), BackoffScale: 0.01})
					if err != nil {
						t.Fatalf("%s on a %s subscription: dev does not start: %v", bound, delivery, err)
					}
					if err := env.Close(); err != nil {
						t.Errorf("close: %v", err)
					}
					started++
				}
				if started == 0 {
					t.Fatalf("the documented bound %s is valid on neither delivery:\n%s", bound, strings.Join(errs, "\n"))
				}
			})
		}
	}
}
