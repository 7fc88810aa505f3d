package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/consumer/settings"
	"github.com/eventpipe/eventpipe/render"
	"github.com/eventpipe/eventpipe/spec"
)

const (
	fieldType   = "gcp:firestore/field:Field"
	serviceType = "gcp:cloudrunv2/service:Service"
)

// TestFirestoreTTLDeclaredOnce renders every stack (and a fixture mixing
// stores) and checks the Firestore TTL policies against the consumers: a
// gcp:firestore/field:Field is one real object per project, database,
// collection group and field, so no two may name the same one, and every
// collection a Firestore-backed consumer writes (EVENTPIPE_STORE,
// EVENTPIPE_COLLECTION_PREFIX) must have exactly one, with nothing else.
func TestFirestoreTTLDeclaredOnce(t *testing.T) {
	cases := []struct {
		stack, configFile string
		wantFields        int
	}{
		{stack: "dev", wantFields: 12},
		{stack: "staging", wantFields: 12},
		{stack: "prod", wantFields: 12},
		// orders, invoices, analytics on Firestore; ledger and scratch (PostgreSQL, scratch on Cloud SQL) need none.
		{stack: "mixed-stores", configFile: "testdata/Pulumi.mixed-stores.yaml", wantFields: 12},
	}
	for _, tc := range cases {
		t.Run(tc.stack, func(t *testing.T) {
			res, err := render.Render(context.Background(), render.Options{Stack: tc.stack, ConfigFile: tc.configFile, StackDir: "."})
			if err != nil {
				t.Fatal(err)
			}
			fields := ttlFields(t, res.Plan)
			for _, problem := range ttlProblems(t, res.Plan, fields) {
				t.Error(problem)
			}
			n := 0
			for _, urns := range fields {
				n += len(urns)
			}
			if n != tc.wantFields {
				t.Errorf("%d TTL fields, want %d", n, tc.wantFields)
			}
		})
	}
}

// ttlFields maps project/database/collection/field to the URNs of the Field
// resources declaring it.
func ttlFields(t *testing.T, plan *render.Plan) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, s := range plan.StepsOfType(fieldType) {
		in := s.NewState.Inputs
		if _, ok := in["ttlConfig"].(map[string]any); !ok {
			t.Errorf("%s: ttlConfig = %#v, want an object (nil disables TTL)", s.URN, in["ttlConfig"])
		}
		key := fmt.Sprintf("%v/%v/%v/%v", in["project"], in["database"], in["collection"], in["field"])
		out[key] = append(out[key], s.URN)
	}
	return out
}

// ttlProblems lists Field resources declared more than once, consumers whose
// Firestore collections lack one, and fields no consumer uses.
func ttlProblems(t *testing.T, plan *render.Plan, fields map[string][]string) []string {
	t.Helper()
	var problems []string
	for _, key := range spec.SortedKeys(fields) {
		if urns := fields[key]; len(urns) > 1 {
			problems = append(problems, fmt.Sprintf("TTL policy %s declared %d times: %s", key, len(urns), strings.Join(urns, ", ")))
		}
	}
	used := map[string]bool{}
	for _, s := range plan.StepsOfType(serviceType) {
		env := serviceEnv(t, s.NewState)
		store, ok := env[settings.Store].(string)
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: %s = %#v, want the plain store URL", s.URN, settings.Store, env[settings.Store]))
			continue
		}
		rest, firestore := strings.CutPrefix(store, "firestore://")
		if !firestore {
			continue
		}
		prefix, ok := env[settings.CollectionPrefix].(string)
		if !ok || prefix == "" {
			problems = append(problems, fmt.Sprintf("%s: %s not set", s.URN, settings.CollectionPrefix))
			continue
		}
		for _, c := range spec.StoreCollections() {
			key := rest + "/" + prefix + c + "/" + spec.ExpiryField
			used[key] = true
			if len(fields[key]) == 0 {
				problems = append(problems, fmt.Sprintf("%s writes %s%s in %s without a TTL policy on %s", s.URN, prefix, c, store, spec.ExpiryField))
			}
		}
	}
	for _, key := range spec.SortedKeys(fields) {
		if !used[key] {
			problems = append(problems, fmt.Sprintf("TTL policy %s covers no consumer's collection", key))
		}
	}
	return problems
}

// serviceEnv is the env of a Cloud Run service's first container, by name.
func serviceEnv(t *testing.T, s render.State) map[string]any {
	t.Helper()
	tmpl, _ := s.Inputs["template"].(map[string]any)
	containers, _ := tmpl["containers"].([]any)
	if len(containers) == 0 {
		t.Fatalf("%s has no container", s.URN)
	}
	envs, _ := containers[0].(map[string]any)["envs"].([]any)
	out := map[string]any{}
	for _, e := range envs {
		m, _ := e.(map[string]any)
		if name, ok := m["name"].(string); ok {
			out[name] = m["value"]
		}
	}
	return out
}
