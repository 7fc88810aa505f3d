package gcpstandin

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

const (
	tService    = "gcp:cloudrunv2/service:Service"
	tWorkerPool = "gcp:cloudrunv2/workerPool:WorkerPool"
)

// containers parses a template's containers as the stand-in sees them (JSON numbers
// are float64, as property values become).
func containers(t *testing.T, doc string) []map[string]any {
	t.Helper()
	var out []map[string]any
	if err := json.Unmarshal([]byte(doc), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestContainerRules: each documented rule refuses the template that breaks it, naming
// the container and the field, and the templates eventpipe declares (a service's
// consumer with ports and probes and a handler it depends on; a worker pool's without
// ports or probes) pass.
func TestContainerRules(t *testing.T) {
	const consumer = `{"name":"consumer","ports":{"containerPort":8080},"dependsOns":["handler"],
	  "startupProbe":{"httpGet":{"path":"/healthz","port":8080},"periodSeconds":2,"failureThreshold":15,"timeoutSeconds":1},
	  "livenessProbe":{"httpGet":{"path":"/healthz","port":8080},"periodSeconds":10,"failureThreshold":3,"timeoutSeconds":2}}`
	const handler = `{"name":"handler","startupProbe":{"httpGet":{"path":"/healthz","port":8081},"periodSeconds":2,"failureThreshold":30,"timeoutSeconds":1}}`
	tests := []struct {
		name, typ, doc string
		want           string // "" passes
	}{
		{"service with handler", tService, `[` + consumer + `,` + handler + `]`, ""},
		{"worker pool with handler", tWorkerPool, `[{"name":"consumer","dependsOns":["handler"]},{"name":"handler"}]`, ""},
		{"dependsOn a container without a startup probe", tService, `[` + consumer + `,{"name":"handler"}]`, `container "handler" has no startup probe`},
		{"dependsOn a missing container", tWorkerPool, `[{"name":"consumer","dependsOns":["handler"]}]`, `container "handler" not found`},
		{"startup probe over 240s", tService, `[` + consumer + `,` + strings.Replace(handler, `"failureThreshold":30`, `"failureThreshold":121`, 1) + `]`, "at most 240s"},
		{"period below timeout", tService, `[` + consumer + `,` + strings.Replace(handler, `"timeoutSeconds":1`, `"timeoutSeconds":3`, 1) + `]`, "periodSeconds (2) must be at least timeoutSeconds (3)"},
		{"sidecar probe without a port", tService, `[` + consumer + `,` + strings.Replace(handler, `,"port":8081`, ``, 1) + `]`, "handler].startupProbe.httpGet: no port"},
		{"ingress probe port defaults", tService, `[` + strings.Replace(consumer, `"path":"/healthz","port":8080},"periodSeconds":2`, `"path":"/healthz"},"periodSeconds":2`, 1) + `,` + handler + `]`, ""},
		{"worker pool container with a probe", tWorkerPool, `[{"name":"consumer","dependsOns":["handler"]},` + handler + `]`, "handler].startupProbe: pulumi-gcp v8's worker pool container has no such property"},
		{"worker pool container with ports", tWorkerPool, `[{"name":"consumer","ports":{"containerPort":8080}}]`, "consumer].ports"},
		{"two ingress containers", tService, `[` + consumer + `,{"name":"handler","ports":{"containerPort":8081}}]`, "exactly one container with a port"},
		{"unnamed beside others", tWorkerPool, `[{"name":"consumer"},{}]`, "every container must be named"},
	}
	for _, tt := range tests {
		err := containerRules(tt.typ, containers(t, tt.doc))
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: err = %v, want one saying %q", tt.name, err, tt.want)
		}
	}
}

// genValue is a random plain value of the shapes resource inputs have: strings,
// numbers, booleans (none of them zero: a zero value is never read back differently),
// maps and arrays of those.
func genValue(r *rand.Rand, depth int) any {
	switch k := r.IntN(6); {
	case k == 0 && depth < 3:
		m := map[string]any{}
		for i := range r.IntN(4) + 1 {
			m[fmt.Sprintf("f%d", i)] = genValue(r, depth+1)
		}
		return m
	case k == 1 && depth < 3:
		a := make([]any, r.IntN(3)+1)
		for i := range a {
			a[i] = genValue(r, depth+1)
		}
		return a
	case k == 2:
		return true
	case k == 3:
		return float64(r.IntN(100) + 1)
	default:
		return fmt.Sprintf("v%d", r.IntN(1000))
	}
}

// genRun is random Cloud Run inputs: a template of containers with and without
// resources and cpuIdle, random other fields, and a launchStage that is unset, GA or
// BETA.
func genRun(r *rand.Rand) (string, map[string]any) {
	typ := []string{tService, tWorkerPool}[r.IntN(2)]
	var containers []any
	for i := range r.IntN(3) + 1 {
		c := map[string]any{"name": fmt.Sprintf("c%d", i), "image": "img"}
		switch r.IntN(3) {
		case 1:
			c["resources"] = map[string]any{"limits": map[string]any{"cpu": "1", "memory": "512Mi"}}
		case 2:
			c["resources"] = map[string]any{"limits": map[string]any{"cpu": "1"}, "cpuIdle": r.IntN(2) == 0}
		}
		containers = append(containers, c)
	}
	in := map[string]any{"project": "p", "location": "europe-west1", "name": "svc",
		"template": map[string]any{"containers": containers, "labels": genValue(r, 1)}}
	for i := range r.IntN(3) {
		in[fmt.Sprintf("x%d", i)] = genValue(r, 0)
	}
	switch r.IntN(3) {
	case 1:
		in["launchStage"] = "GA"
	case 2:
		in["launchStage"] = "BETA"
	}
	return typ, in
}

// TestReadBackDiffs holds the stand-in's diff against the read-back state to the
// provider's rules, for any Cloud Run inputs: a second preview of the same inputs
// differs exactly when they send a launch stage the API does not report (BETA, read
// back GA); leaving out launchStage, optional and computed, later is no change; leaving
// out a field that is not computed is one; and the read-back fills cpuIdle false exactly
// where a service container has resources without it.
func TestReadBackDiffs(t *testing.T) {
	r := rand.New(rand.NewPCG(36, 1))
	for i := range 2000 {
		typ, in := genRun(r)
		state := readBack(typ, in)
		got := changed(typ, in, in, state)
		want := []string(nil)
		if in["launchStage"] == "BETA" {
			want = []string{"launchStage"}
		}
		if !equal(got, want) {
			t.Fatalf("case %d: %s %v: second preview changes %v, want %v", i, typ, in, got, want)
		}
		without := deepCopy(in).(map[string]any)
		delete(without, "launchStage")
		if got := changed(typ, in, without, state); len(got) != 0 {
			t.Fatalf("case %d: leaving out launchStage (optional, computed) changes %v", i, got)
		}
		if _, ok := in["x0"]; ok {
			without := deepCopy(in).(map[string]any)
			delete(without, "x0")
			if got, want := changed(typ, in, without, state), append(want, "x0"); !equal(got, want) {
				t.Fatalf("case %d: leaving out x0 (not computed, %v) changes %v, want %v", i, in["x0"], got, want)
			}
		}
		for j, c := range list(state["template"].(map[string]any), "containers") {
			given, _ := in["template"].(map[string]any)["containers"].([]any)[j].(map[string]any)["resources"].(map[string]any)
			_, idleGiven := given["cpuIdle"]
			res := c["resources"].(map[string]any)
			if typ == tService && given != nil && !idleGiven && res["cpuIdle"] != false {
				t.Fatalf("case %d: container %d with resources and no cpuIdle read back %v", i, j, res)
			}
		}
	}
}

// TestPropagation: an API enabled at T is refused until T+delay and usable from then
// on, for any delay; one enabled outside the stack is usable at once; enabling an API
// reads the project back through Cloud Resource Manager, so it fails while that API
// propagates, and stays enabled.
func TestPropagation(t *testing.T) {
	r := rand.New(rand.NewPCG(36, 2))
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for range 500 {
		delay := time.Duration(r.IntN(300_000)) * time.Millisecond
		s := &standin{dir: t.TempDir(), enabled: []string{apiServiceUsage}, projects: map[string]string{"p": "1"}, propagation: delay}
		st := map[string]Record{}
		svc := func(api string, at time.Time) Record {
			return Record{Type: "gcp:projects/service:Service", Name: "api-x", State: map[string]any{"project": "p", "service": api}, Created: at}
		}
		err := s.enable(st, "urn:crm", svc(apiResourceManager, t0))
		if (err == nil) != (delay == 0) {
			t.Fatalf("delay %s: enabling Cloud Resource Manager itself: %v", delay, err)
		}
		if _, on := s.enabledAt(st, apiResourceManager, "p"); !on {
			t.Fatalf("delay %s: Cloud Resource Manager not enabled after its failed read-back", delay)
		}
		early := t0.Add(delay - time.Millisecond)
		if delay > 0 {
			if err := s.enable(st, "urn:pubsub", svc("pubsub.googleapis.com", early)); err == nil || !strings.Contains(err.Error(), "SERVICE_DISABLED") {
				t.Fatalf("delay %s: enabling Pub/Sub before Cloud Resource Manager propagated: %v", delay, err)
			}
			delete(st, enablementKey("p", "pubsub.googleapis.com"))
		}
		at := t0.Add(delay)
		if err := s.enable(st, "urn:pubsub", svc("pubsub.googleapis.com", at)); err != nil {
			t.Fatalf("delay %s: enabling Pub/Sub once Cloud Resource Manager propagated: %v", delay, err)
		}
		if err := s.usable(st, "pubsub.googleapis.com", "p", at.Add(delay-time.Millisecond)); delay > 0 && err == nil {
			t.Fatalf("delay %s: Pub/Sub usable before it propagated", delay)
		}
		if err := s.usable(st, "pubsub.googleapis.com", "p", at.Add(delay)); err != nil {
			t.Fatalf("delay %s: Pub/Sub not usable once propagated: %v", delay, err)
		}
		if err := s.usable(st, apiServiceUsage, "p", t0); err != nil {
			t.Fatalf("an API enabled outside the stack: %v", err)
		}
	}
}
