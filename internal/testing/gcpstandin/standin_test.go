package gcpstandin

import (
	"encoding/json"
	"strings"
	"testing"
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
