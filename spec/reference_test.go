package spec_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/spec"
)

// updateDocsEnv regenerates docs/configuration.md instead of comparing:
// EVENTPIPE_UPDATE_DOCS=1 go test ./spec/ -run TestConfigurationReference
const updateDocsEnv = "EVENTPIPE_UPDATE_DOCS"

const referencePath = "../docs/configuration.md"

// TestConfigurationReference keeps docs/configuration.md generated from the
// config types themselves: their JSON names, Go types and doc comments.
func TestConfigurationReference(t *testing.T) {
	got := generateReference(t)
	if os.Getenv(updateDocsEnv) != "" {
		if err := os.WriteFile(referencePath, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != got {
		t.Errorf("%s is out of date with spec/spec.go; run %s=1 go test ./spec/ -run TestConfigurationReference", referencePath, updateDocsEnv)
	}
}

// TestReferenceCoversEveryField guards the generator: every config field of
// every type appears in the generated reference.
func TestReferenceCoversEveryField(t *testing.T) {
	doc := generateReference(t)
	for _, typ := range []any{spec.Stack{}, spec.Defaults{}, spec.Pipeline{}, spec.Topic{}, spec.Consumer{}, spec.Subscription{}, spec.DeadLetter{}} {
		rt := reflect.TypeOf(typ)
		for i := range rt.NumField() {
			name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			if !strings.Contains(doc, "| `"+name+"` |") {
				t.Errorf("%s.%s (%s) missing from the reference", rt.Name(), rt.Field(i).Name, name)
			}
		}
	}
}

// section describes one config object of the reference.
type section struct {
	typeName, title, where string
	// optional sections are documented when their type exists (alerts are added by issue 6).
	optional bool
}

func generateReference(t *testing.T) string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	structs := map[string]*ast.StructType{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			if ts, ok := n.(*ast.TypeSpec); ok {
				if st, ok := ts.Type.(*ast.StructType); ok {
					structs[ts.Name.Name] = st
				}
			}
			return true
		})
	}
	var b strings.Builder
	b.WriteString(referenceIntro)
	for _, s := range []section{
		{"Stack", "Stack keys", "Top-level keys of the stack file, each written `eventpipe:<key>` under `config:`.", false},
		{"Defaults", "`eventpipe:defaults`", "Per-environment defaults every pipeline of the stack inherits.", false},
		{"Pipeline", "`eventpipe:pipelines.<name>`", "One pipeline; the map key is its name (2–25 lowercase letters, digits or hyphens). Adding a pipeline never renames another.", false},
		{"Topic", "`…<name>.topic`", "The pipeline's source topic.", false},
		{"Consumer", "`…<name>.consumer`", "The Cloud Run service running the eventpipe consumer.", false},
		{"Subscription", "`…<name>.subscriptions.<key>`", "One subscription on the topic; the map key (1–30 lowercase letters, digits or hyphens) is unique within the pipeline.", false},
		{"DeadLetter", "`…subscriptions.<key>.deadLetter`", "The subscription's dead-letter queue.", false},
		{"StackAlerts", "`eventpipe:alerts`", "Stack-wide alerting settings.", true},
		{"PipelineAlerts", "`…<name>.alerts`", "A pipeline's alerting settings.", true},
	} {
		st, ok := structs[s.typeName]
		if !ok {
			if s.optional {
				continue
			}
			t.Fatalf("type %s not found in package spec", s.typeName)
		}
		fmt.Fprintf(&b, "\n## %s\n\n%s\n\n| key | type | meaning |\n| --- | --- | --- |\n", s.title, s.where)
		for _, f := range st.Fields.List {
			if f.Tag == nil {
				continue
			}
			tag := reflect.StructTag(strings.Trim(f.Tag.Value, "`"))
			name, _, _ := strings.Cut(tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			doc := strings.Join(strings.Fields(f.Doc.Text()), " ")
			for _, verb := range []string{" is ", " are ", " "} {
				if rest, ok := strings.CutPrefix(doc, f.Names[0].Name+verb); ok {
					doc = strings.ToUpper(rest[:1]) + rest[1:]
					break
				}
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", name, typeText(f.Type), strings.ReplaceAll(doc, "|", `\|`))
		}
	}
	b.WriteString(referenceOutro)
	return b.String()
}

// typeText names a field's Go type the way a config author thinks of it.
func typeText(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return typeText(x.X)
	case *ast.Ident:
		switch x.Name {
		case "string":
			return "string"
		case "int":
			return "integer"
		case "bool":
			return "boolean"
		case "Duration":
			return "duration"
		}
		return "object"
	case *ast.ArrayType:
		return "list of " + typeText(x.Elt) + "s"
	case *ast.MapType:
		return "map of " + typeText(x.Value) + "s"
	}
	return "value"
}

const referenceIntro = `# Configuration reference

<!-- Generated from the config types in spec/spec.go by spec/reference_test.go.
     Do not edit by hand: change the doc comments, then run
     EVENTPIPE_UPDATE_DOCS=1 go test ./spec/ -run TestConfigurationReference -->

A stack's configuration lives in ` + "`stacks/Pulumi.<stack>.yaml`" + ` under ` + "`config:`" + `, in the
` + "`eventpipe`" + ` namespace. The same file drives ` + "`pulumi up`" + ` and the offline
` + "`eventpipe render --stack <stack>`" + `. Every value is checked before anything is declared;
one run reports every problem, each with the file and line, the pipeline, the key, the
value found, what is allowed and how to fix it. Unknown keys are errors, so a typo never
falls back to a default silently.

Durations are strings with a unit: ` + "`10s`, `10m`, `1h30m`, `14d`" + `.
A value written ` + "`{secure: …}`" + ` (` + "`pulumi config set --secret`" + `) is kept secret; the
offline renderer shows it as ` + "`\"[secret]\"`" + `.

A minimal stack:

` + "```yaml" + `
config:
  eventpipe:project: acme-prod
  eventpipe:projectNumber: "123456789012"
  eventpipe:pipelines:
    orders:
      consumer:
        image: europe-west1-docker.pkg.dev/acme-prod/eventpipe/consumer:1.0.0
      subscriptions:
        main:
          delivery: push
` + "```" + `

Everything else takes the defaults below: a dead-letter topic ` + "`orders-main.dlq`" + ` with a
never-expiring subscription keeping 14 days, 5 delivery attempts, retry backoff 10s–600s,
an ack deadline equal to the consumer's 60s request timeout, internal-only ingress, and
Firestore TTL on ` + "`expireAt`" + ` of the consumer's collections.
`

const referenceOutro = `
## Rules that span keys

- A push subscription's ` + "`ackDeadline`" + ` equals its consumer's ` + "`requestTimeout`" + ` (set one, or both alike);
  otherwise Pub/Sub redelivers while the first request still runs.
- ` + "`exactlyOnce`" + ` is for ` + "`delivery: pull`" + ` only; ` + "`pushEndpoint`" + ` for ` + "`delivery: push`" + ` only, and https.
- ` + "`minBackoff`" + ` ≤ ` + "`maxBackoff`" + `; ` + "`minInstances`" + ` ≤ ` + "`maxInstances`" + `.
- A pipeline with a pull subscription needs ` + "`consumer.minInstances`" + ` ≥ 1 (a consumer scaled to zero never pulls).
- ` + "`deadLetter.optOut: true`" + ` needs a ` + "`reason`" + `; it removes the dead-letter topic, its subscription and the
  service-agent grants, and labels the subscription ` + "`eventpipe_dlq_opt_out=true`" + ` and
  ` + "`eventpipe_dlq_opt_out_reason=<reason>`" + ` so policy checks can see it. ` + "`maxDeliveryAttempts`" + ` and
  ` + "`deadLetter.retention`" + ` are then errors.
- Topic and subscription ids (including the derived ` + "`<subscription>.dlq`" + ` and ` + "`<subscription>.dlq-sub`" + `)
  are unique in the stack.
- Each pipeline owns its store collections: ` + "`consumer.collectionPrefix`" + ` (default ` + "`eventpipe_PIPELINE_`" + `)
  is unique among the pipelines sharing a Firestore database or PostgreSQL store, and each Firestore-backed
  pipeline gets its own TTL policies (one ` + "`gcp:firestore/field:Field`" + ` per collection on ` + "`expireAt`" + `).
- Labels under ` + "`labels`" + ` follow GCP's rules and may not start with ` + "`eventpipe_`" + `.

## Labels eventpipe sets

| label | value |
| --- | --- |
| ` + "`eventpipe_pipeline`" + ` | the pipeline name |
| ` + "`eventpipe_env`" + ` | ` + "`eventpipe:env`" + ` (default: the stack name) |
| ` + "`eventpipe_role`" + ` | ` + "`source`" + ` (topic, subscription), ` + "`dlq`" + ` (dead-letter topic and subscription), ` + "`consumer`" + ` (service) |
| ` + "`eventpipe_dlq_opt_out`" + ` | ` + "`true`" + ` on a subscription that opted out of its DLQ |
| ` + "`eventpipe_dlq_opt_out_reason`" + ` | the opt-out reason, lowercased, other characters replaced by ` + "`-`" + ` |

## Consumer environment

The consumer service gets ` + "`EVENTPIPE_ENV`, `EVENTPIPE_SERVICE`, `EVENTPIPE_VERSION`" + ` (image tag or digest),
` + "`EVENTPIPE_STORE`, `EVENTPIPE_ROUTES`" + ` (only when ` + "`consumer.routes`" + ` is set), ` + "`EVENTPIPE_OIDC_AUDIENCE`" + `,
` + "`EVENTPIPE_PUSH_ACCOUNTS`, `EVENTPIPE_PULL_SUBSCRIPTIONS` and `EVENTPIPE_COLLECTION_PREFIX`" + `. Cloud Run sets
` + "`PORT`" + ` (8080) itself. Startup and liveness probes call ` + "`GET /healthz`" + `; Pub/Sub pushes to
` + "`<service URL>/pubsub/push`" + `.
`
