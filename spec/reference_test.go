package spec_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/limits"
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
	for _, typ := range []any{spec.Stack{}, spec.Defaults{}, spec.Pipeline{}, spec.Topic{}, spec.Consumer{}, spec.VPCAccess{}, spec.Handler{}, spec.Subscription{}, spec.DeadLetter{}, spec.Channels{}} {
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

// TestReferenceStatesEveryBound: each bounded setting's row in the reference states the
// range spec.Bounds gives it and its default, so the comments cannot drift from the table.
func TestReferenceStatesEveryBound(t *testing.T) {
	doc := generateReference(t)
	sections := map[string]string{ // path prefix → the reference section's title
		"defaults.":                               "## `eventpipe:defaults`",
		"pipelines.*.topic.":                      "## `…<name>.topic`",
		"pipelines.*.consumer.":                   "## `…<name>.consumer`",
		"pipelines.*.subscriptions.*.":            "## `…<name>.subscriptions.<key>`",
		"pipelines.*.subscriptions.*.deadLetter.": "## `…subscriptions.<key>.deadLetter`",
	}
	for _, b := range spec.Bounds() {
		prefix := b.Path[:len(b.Path)-len(b.Key())]
		title, ok := sections[prefix]
		if !ok {
			t.Errorf("%s: no reference section for %s", b.Path, prefix)
			continue
		}
		_, rest, _ := strings.Cut(doc, title+"\n")
		section, _, _ := strings.Cut(rest, "\n## ")
		_, row, found := strings.Cut(section, "| `"+b.Key()+"` |")
		row, _, _ = strings.Cut(row, "\n")
		def, alt := b.Format(b.Default), b.Format(b.Default)
		switch {
		case b.Inherits != "":
			def, alt = spec.Namespace+":"+b.Inherits, spec.Namespace+":"+b.Inherits
		case b.Kind == spec.Span:
			alt = spec.Seconds(time.Duration(b.Default)) // "60s" rather than "1m"
		}
		if !found || !strings.Contains(row, b.Allowed()) || !strings.Contains(row, "default "+def) && !strings.Contains(row, "default "+alt) {
			t.Errorf("%s: the reference row %q does not state %s and default %s", b.Path, row, b.Allowed(), def)
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
		{"VPCAccess", "`…<name>.consumer.vpcAccess`", "The consumer's Direct VPC egress, which a store on a private address needs (see README, Deploying).", false},
		{"Handler", "`…<name>.consumer.handler`", "The team's own container beside the consumer ([docs/handlers.md](handlers.md)).", false},
		{"Subscription", "`…<name>.subscriptions.<key>`", "One subscription on the topic; the map key (1–30 lowercase letters, digits or hyphens) is unique within the pipeline.", false},
		{"DeadLetter", "`…subscriptions.<key>.deadLetter`", "The subscription's dead-letter queue.", false},
		{"StackAlerts", "`eventpipe:alerts`", "Stack-wide alerting settings.", true},
		{"Channels", "`eventpipe:alerts.channels`", "Notification channels per severity.", true},
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
			typ := typeText(f.Type)
			if isSpan(s.typeName, name) {
				typ = "duration" // held as written, "10s" or "14d"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", name, typ, strings.ReplaceAll(doc, "|", `\|`))
		}
	}
	writeBounds(&b)
	// The sizing example is what the components write for a default consumer (512Mi,
	// maxMessageBytes 10000000, the default concurrency), from the one memory model.
	example := strings.NewReplacer(
		"{{concurrency512Mi}}", strconv.Itoa(limits.MaxConcurrency(512<<20, limits.MaxMessageBytes, spec.DefaultConcurrency)),
		"{{defaultConcurrency}}", strconv.Itoa(spec.DefaultConcurrency))
	b.WriteString(example.Replace(referenceOutro))
	return b.String()
}

// writeBounds writes the section on bounds from spec.Bounds, the table validation and
// the rules' default settings are derived from.
func writeBounds(b *strings.Builder) {
	b.WriteString(`
## Bounds and the check

Every bounded setting, from the one table (` + "`spec.Bounds`" + `) that validation, the rules' default
settings (` + "`policies/lib_settings.rego`" + `), the policy-pack configuration schema and drift read. A rule
setting that judges a bounded setting defaults to the end of the range the config accepts, so a
stack that validates passes ` + "`eventpipe check`" + ` on it; one past the bound is refused by both, naming
the setting and the bound. A team narrows the check's range in its check configuration
(` + "`thresholds.<rule>.<setting>`" + `, e.g. ` + "`deny_dead_letter_attempts_out_of_range: {max: 10}`" + `); each setting's
schema takes only values Pub/Sub itself accepts.

| setting | accepted | default | checked by (default) |
| --- | --- | --- | --- |
`)
	for _, bd := range spec.Bounds() {
		def := bd.Format(bd.Default)
		if bd.Inherits != "" {
			def = "`" + bd.Inherits + "`"
		}
		var checks []string
		for _, c := range bd.Checks {
			checks = append(checks, fmt.Sprintf("`%s.%s` (%v)", c.Rule, c.Setting, c.Default(bd)))
		}
		if len(checks) == 0 {
			checks = []string{"—"}
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", bd.Path, bd.Allowed(), def, strings.Join(checks, ", "))
	}
}

// isSpan reports whether key of the config type typeName is a duration:
// a bound of kind Span in spec.Bounds.
func isSpan(typeName, key string) bool {
	prefix := map[string]string{"Defaults": "defaults.", "Topic": "pipelines.*.topic.", "Consumer": "pipelines.*.consumer.",
		"Subscription": "pipelines.*.subscriptions.*.", "DeadLetter": "pipelines.*.subscriptions.*.deadLetter."}[typeName]
	for _, b := range spec.Bounds() {
		if prefix != "" && b.Path == prefix+key && b.Kind == spec.Span {
			return true
		}
	}
	return false
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
	case *ast.SelectorExpr:
		if x.Sel.Name == "StringInput" { // a value a program may pass as an output
			return "string"
		}
		return "object" // json.RawMessage: an object another package reads
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

Durations are strings with a unit: ` + "`10s`, `10m`, `1h30m`, `14d`" + `. This is the one duration
grammar of eventpipe (internal/durations), the same in stack config, the ` + "`alerts`" + ` block, the
consumer's routes file, its ` + "`EVENTPIPE_*`" + ` duration variables and the CLI's duration flags:
Go's syntax (` + "`ns`, `us`, `ms`, `s`, `m`, `h`" + `, fractions such as ` + "`2.5s`" + `) or a whole number of
days (` + "`14d`" + `); never negative. The settings below that have a range are Pub/Sub and Cloud Run
durations, set in whole seconds: ` + "`2.5s`" + ` there is an error, not cut to ` + "`2s`" + `.
YAML anchors and merge keys (` + "`<<: *base`" + `) share settings between pipelines or
subscriptions; render and check read them as ` + "`pulumi up`" + ` does (the keys written beside a
merge win, then the first mapping of a merged list).
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
- A pipeline whose consumer pulls a subscription needs ` + "`consumer.minInstances`" + ` ≥ 1 (a consumer scaled to zero never pulls).
- ` + "`subscribers`" + ` are for ` + "`delivery: pull`" + ` only; ` + "`external: true`" + ` needs ` + "`delivery: pull`" + ` and at least one
  subscriber, and leaves the subscription to them (the consumer does not pull it).
- ` + "`topic.existing`" + ` is a full topic name; with it, ` + "`name`, `messageRetention`, `schema`, `schemaEncoding` and `kmsKeyName`" + `
  are its owner's and are errors here (` + "`publishers`" + ` is allowed). Several pipelines may read one existing topic.
- ` + "`deadLetter.optOut: true`" + ` needs a ` + "`reason`" + `; it removes the dead-letter topic, its subscription and the
  service-agent grants, and labels the subscription ` + "`eventpipe_dlq_opt_out=true`" + ` and
  ` + "`eventpipe_dlq_opt_out_reason=<reason>`" + ` so policy checks can see it. ` + "`maxDeliveryAttempts`" + ` and
  ` + "`deadLetter.retention`" + ` are then errors.
- Topic and subscription ids (including the derived ` + "`<subscription>.dlq`" + ` and ` + "`<subscription>.dlq-sub`" + `)
  are unique in the stack.
- Each pipeline owns its store collections: ` + "`consumer.collectionPrefix`" + ` (default ` + "`eventpipe_PIPELINE_`" + `)
  is unique among the pipelines sharing a Firestore database or PostgreSQL store, and each Firestore-backed
  pipeline gets its own TTL policies (one ` + "`gcp:firestore/field:Field`" + ` per collection on ` + "`expireAt`" + `).
- A store URL with a password is a secret (` + "`pulumi config set --secret eventpipe:store URL`" + `): in plain
  config it is an error. The components keep a secret URL in a Secret Manager secret (` + "`SERVICE-store`" + `) that only the
  consumer's account may read, and the service reads it from there (` + "`valueSource.secretKeyRef`" + `, pinned to the
  version written); the service definition never holds it. A Firestore URL is never a secret: it holds no credential,
  and the components read it to declare the TTL policies and the ` + "`roles/datastore.user`" + ` grant.
- Labels under ` + "`labels`" + ` follow GCP's rules and may not start with ` + "`eventpipe_`" + `.

## Instance sizing

Cloud Run's rules are checked before anything is declared, each error naming the key to change and the fix:

| cpu | memory allowed | also |
| --- | --- | --- |
| ` + "`\"0.08\"`" + ` up to ` + "`\"0.5\"`" + ` (or ` + "`\"80m\"`" + `–` + "`\"499m\"`" + `) | 128Mi–512Mi | ` + "`concurrency: 1`" + `, ` + "`executionEnvironment: gen1`" + `, no pull subscription |
| ` + "`\"0.5\"`" + ` up to 1 | 128Mi–1Gi | as above |
| ` + "`\"1\"`" + ` | 128Mi–4Gi | |
| ` + "`\"2\"`" + ` | 128Mi–8Gi | |
| ` + "`\"4\"`" + ` | 2Gi–16Gi | |
| ` + "`\"6\"`" + ` | 4Gi–24Gi | |
| ` + "`\"8\"`" + ` | 4Gi–32Gi | |

Other CPU counts (` + "`\"3\"`, `\"1500m\"`" + `) are errors; above 1 CPU only whole counts exist. The second-generation
execution environment (` + "`gen2`" + `, the default) needs at least 512Mi; below that set ` + "`executionEnvironment: gen1`" + `.
The environment is always set explicitly on the service.

The consumer's memory bounds how many messages it can hold at once. The service gets ` + "`GOMEMLIMIT`" + ` (` + "`limits.MemoryLimit`" + `: most of its
memory, leaving headroom for what the Go runtime does not count) and a request concurrency of ` + "`consumer.concurrency`" + `, or fewer: as many messages of ` + "`consumer.maxMessageBytes`" + `
(default 10,000,000, Pub/Sub's largest) as fit beside the consumer, by the consumer's own memory model
(` + "`consumer/limits`" + `). A consumer that pulls gets the same number as its pull flow control
(` + "`EVENTPIPE_PULL_MAX_OUTSTANDING_MESSAGES`" + `). When the number is lowered, the service's description says so (for
example ` + "`request concurrency {{concurrency512Mi}}, not the configured {{defaultConcurrency}}: 512Mi of memory holds {{concurrency512Mi}} messages of 10000000 bytes`" + `) and
` + "`pulumi up`" + ` logs it. Memory that cannot hold even one such message is an error naming the memory that would, and the
largest ` + "`maxMessageBytes`" + ` that fits. If the producers' messages are small, set ` + "`maxMessageBytes`" + ` to keep the
configured concurrency.

## Protection

` + "`eventpipe:defaults.protect`" + ` (default ` + "`true`" + `; a pipeline's own ` + "`protect`" + ` overrides it) guards an environment's state:

- every topic, subscription, dead-letter topic and dead-letter subscription gets Pulumi's ` + "`protect`" + `: a ` + "`pulumi up`" + `
  that would delete or replace one (a changed ` + "`topic`, `filter` or `ordering`" + ` replaces a subscription and drops
  its backlog) or a ` + "`pulumi destroy`" + ` fails and names it, until protect is turned off;
- every Cloud Run service sets ` + "`deletionProtection`" + ` explicitly, to the same value (the provider's default is on,
  which makes every destroy of an unprotected stack fail).

Set ` + "`protect: false`" + ` in development and short-lived stacks. To decommission one pipeline of a protected stack, set
its ` + "`protect: false`" + `, run ` + "`pulumi up`" + `, then remove it. Pulumi's ` + "`retainOnDelete`" + ` is not used: with fixed names a
replaced subscription would still collide with the old one, and a removed one would be left reading messages nobody reads.

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
` + "`EVENTPIPE_STORE`" + ` (a value, or a Secret Manager reference for a secret store), ` + "`EVENTPIPE_ROUTES`" + ` (only when
` + "`consumer.routes`" + ` is set), ` + "`EVENTPIPE_OIDC_AUDIENCE`, `EVENTPIPE_PUSH_ACCOUNTS`, `EVENTPIPE_PULL_SUBSCRIPTIONS`" + `,
` + "`EVENTPIPE_COLLECTION_PREFIX`" + `, ` + "`GOMEMLIMIT`" + ` and, when it pulls, ` + "`EVENTPIPE_PULL_MAX_OUTSTANDING_MESSAGES`" + `
(see "Instance sizing"). Cloud Run sets ` + "`PORT`" + ` (8080) itself. Startup and liveness probes call ` + "`GET /healthz`" + `;
Pub/Sub pushes to ` + "`<service URL>/pubsub/push`" + `.
`
