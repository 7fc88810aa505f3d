package analyzer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	resourceanalyzer "github.com/pulumi/pulumi/pkg/v3/resource/analyzer"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"github.com/pulumi/pulumi/sdk/v3/go/common/diag"
	"github.com/pulumi/pulumi/sdk/v3/go/common/diag/colors"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"

	"github.com/eventpipe/eventpipe/internal/testing/gobuild"
	"github.com/eventpipe/eventpipe/internal/testing/plantest"
	"github.com/eventpipe/eventpipe/render"
)

// binDir holds the analyzer plugin and the eventpipe CLI, built once by TestMain; it is
// first on PATH, where the Pulumi CLI looks for analyzer plugins.
var binDir string

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run()) // the tests skip themselves
	}
	dir, err := os.MkdirTemp("", "eventpipe-analyzer-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := gobuild.Build(context.Background(), "", dir,
		"github.com/eventpipe/eventpipe/cmd/pulumi-analyzer-policy-eventpipe", "github.com/eventpipe/eventpipe/cmd/eventpipe"); err != nil {
		fmt.Fprintf(os.Stderr, "building the plugin and the CLI: %v\n", err)
		os.Exit(2)
	}
	binDir = dir
	// Pulumi's plugin lookup must not see a developer's ~/.pulumi.
	os.Setenv("PULUMI_HOME", filepath.Join(dir, "pulumi-home"))
	os.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// packDir is the policy pack: the policies folder with PulumiPolicy.yaml.
func packDir(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and starts the analyzer plugin")
	}
	dir, err := packDirAbs()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// packDirAbs is the policies folder, made absolute.
func packDirAbs() (string, error) { return filepath.Abs("..") }

// pack is the policy pack started through Pulumi's plugin host, as `pulumi preview
// --policy-pack` starts it.
type pack struct {
	analyzer plugin.Analyzer
	info     plugin.AnalyzerInfo
	// ids maps policy names to rule ids.
	ids    map[string]string
	stderr *bytes.Buffer
	// notices are the advisory "not enforced here" diagnostics of the last analyze, as
	// "ID message"; they are no findings.
	notices []string
}

// startPack starts the pack in dir through Pulumi's default plugin host
// (plugin.Host.PolicyAnalyzer, which runs plugin.NewPolicyAnalyzer) and configures it as
// the CLI's installAndLoadPolicyPlugins does: the --policy-pack-config file, if any, is
// read and reconciled with the policies' schemas by Pulumi's own code, and the result
// passed to Configure (the file's configuration as it stands when Pulumi's validation
// fails). It returns Pulumi's validation errors and Configure's error.
func startPack(t *testing.T, dir, configFile string) (*pack, []string, error) {
	t.Helper()
	var stderr bytes.Buffer
	sink := diag.DefaultSink(&stderr, &stderr, diag.FormatOptions{Color: colors.Never})
	pctx, err := plugin.NewContext(context.Background(), sink, sink, nil, nil, dir, nil, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := pctx.Close(); err != nil {
			t.Errorf("closing the plugin host: %v", err)
		}
	})
	an, err := pctx.Host.PolicyAnalyzer(tokens.QName(dir), dir,
		&plugin.PolicyAnalyzerOptions{Project: "eventpipe", Stack: "prod", DryRun: true})
	if err != nil {
		t.Fatalf("starting the policy pack: %v\n%s", err, stderr.String())
	}
	info, err := an.GetAnalyzerInfo()
	if err != nil {
		t.Fatal(err)
	}
	p := &pack{analyzer: an, info: info, ids: map[string]string{}, stderr: &stderr}
	for _, pol := range info.Policies {
		p.ids[pol.Name] = strings.Fields(pol.DisplayName)[0]
	}
	if !info.SupportsConfig {
		t.Fatal("the pack does not take policy configuration")
	}
	var fromFile map[string]plugin.AnalyzerPolicyConfig
	if configFile != "" {
		if fromFile, err = resourceanalyzer.LoadPolicyPackConfigFromFile(configFile); err != nil {
			t.Fatal(err)
		}
	}
	config, invalid, err := resourceanalyzer.ReconcilePolicyPackConfig(info.Policies, info.InitialConfig, fromFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(invalid) > 0 {
		// The CLI stops here; Configure must reject the same configuration on its own.
		config = fromFile
		for name, c := range config {
			if c.EnforcementLevel == "" {
				c.EnforcementLevel = apitype.Mandatory
				config[name] = c
			}
		}
	}
	return p, invalid, an.Configure(config)
}

// mustStartPack is startPack for a valid configuration.
func mustStartPack(t *testing.T, configFile string) *pack {
	t.Helper()
	p, invalid, err := startPack(t, packDir(t), configFile)
	if len(invalid) > 0 || err != nil {
		t.Fatalf("configuring the pack: %v %v\n%s", invalid, err, p.stderr.String())
	}
	return p
}

// resources turns a preview document's steps into what Pulumi's engine gives analyzers:
// each resource's properties, with the preview's unknown and secret markers as Pulumi's
// computed and secret values, and its provider, parent and dependencies.
func resources(t testing.TB, doc plantest.Doc) []plugin.AnalyzerStackResource {
	t.Helper()
	var out []plugin.AnalyzerStackResource
	for _, raw := range doc["steps"].([]any) {
		step := raw.(map[string]any)
		state := step["newState"].(map[string]any)
		urn := resource.URN(state["urn"].(string))
		inputs, _ := state["inputs"].(map[string]any)
		r := plugin.AnalyzerStackResource{
			AnalyzerResource: plugin.AnalyzerResource{
				URN: urn, Type: tokens.Type(state["type"].(string)), Name: urn.Name(),
				Properties: resource.NewPropertyMapFromMapRepl(inputs, nil, markers),
			},
			PropertyDependencies: map[resource.PropertyKey][]resource.URN{},
		}
		if ref, ok := step["provider"].(string); ok && ref != "" {
			providerURN := resource.URN(ref[:strings.LastIndex(ref, "::")])
			r.Provider = &plugin.AnalyzerProviderResource{URN: providerURN, Type: providerURN.Type(), Name: providerURN.Name()}
		}
		if parent, ok := state["parent"].(string); ok {
			r.Parent = resource.URN(parent)
		}
		for _, d := range state["dependencies"].([]any) {
			r.Dependencies = append(r.Dependencies, resource.URN(d.(string)))
		}
		for k, urns := range state["propertyDependencies"].(map[string]any) {
			for _, u := range urns.([]any) {
				r.PropertyDependencies[resource.PropertyKey(k)] = append(r.PropertyDependencies[resource.PropertyKey(k)], resource.URN(u.(string)))
			}
		}
		out = append(out, r)
	}
	return out
}

// markers turns the preview's markers back into the values Pulumi holds.
func markers(v any) (resource.PropertyValue, bool) {
	switch v {
	case render.Unknown:
		return resource.MakeComputed(resource.NewProperty("")), true
	case render.Secret:
		return resource.MakeSecret(resource.NewProperty("hidden")), true
	}
	return resource.PropertyValue{}, false
}

// analyze drives the pack as Pulumi's engine does in a preview: Analyze on every resource,
// then AnalyzeStack on all of them. It returns the findings as "level id urn message".
func (p *pack) analyze(t *testing.T, doc plantest.Doc) []string {
	t.Helper()
	var diags []plugin.AnalyzeDiagnostic
	stack := resources(t, doc)
	for _, r := range stack {
		resp, err := p.analyzer.Analyze(r.AnalyzerResource)
		if err != nil {
			t.Fatalf("Analyze(%s): %v\n%s", r.URN, err, p.stderr.String())
		}
		for _, d := range resp.Diagnostics {
			if d.URN != r.URN {
				t.Errorf("Analyze(%s) reported %s", r.URN, d.URN)
			}
		}
		diags = append(diags, resp.Diagnostics...)
	}
	resp, err := p.analyzer.AnalyzeStack(stack)
	if err != nil {
		t.Fatalf("AnalyzeStack: %v\n%s", err, p.stderr.String())
	}
	diags = append(diags, resp.Diagnostics...)
	out := make([]string, 0, len(diags))
	p.notices = nil
	for _, d := range diags {
		id := p.ids[d.PolicyName]
		if d.URN == "" && strings.HasPrefix(d.Message, id+" not enforced here: ") {
			p.notices = append(p.notices, id+" "+strings.TrimPrefix(d.Message, id+" "))
			continue
		}
		level := "warn"
		if d.EnforcementLevel == apitype.Mandatory {
			level = "deny"
		}
		msg, fix, ok := strings.Cut(strings.TrimPrefix(d.Message, id+" "), "\nFix: ")
		if !ok || fix == "" || d.PolicyPackName != "eventpipe" || d.PolicyPackVersion == "" {
			t.Errorf("diagnostic %+v lacks its rule id, fix or pack", d)
		}
		out = append(out, strings.Join([]string{level, id, string(d.URN), msg}, " "))
	}
	sort.Strings(out)
	return out
}

// check runs `eventpipe check` on doc with args and returns its findings as "level id urn
// message".
func check(t *testing.T, doc plantest.Doc, args ...string) []string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the eventpipe CLI, which TestMain builds only without -short")
	}
	path := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(path, doc.JSON(t), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(binDir, "eventpipe"), append([]string{"check", path, "-o", "json"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil && cmd.ProcessState.ExitCode() != 1 {
		t.Fatalf("eventpipe check: %v\n%s", err, stderr.String())
	}
	var rep struct {
		Findings []struct {
			RuleID, Level, URN, Message string
		} `json:"findings"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("eventpipe check output: %v\n%s", err, stdout.String())
	}
	out := make([]string, 0, len(rep.Findings))
	for _, f := range rep.Findings {
		out = append(out, strings.Join([]string{f.Level, f.RuleID, f.URN, f.Message}, " "))
	}
	sort.Strings(out)
	return out
}

// ids are the distinct "level:id" of findings.
func ids(findings []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, f := range findings {
		parts := strings.SplitN(f, " ", 3)
		if id := parts[0] + ":" + parts[1]; !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

func renderStack(t testing.TB, stack string) plantest.Doc {
	t.Helper()
	data, err := render.Stack(context.Background(), render.Options{Stack: stack})
	if err != nil {
		t.Fatal(err)
	}
	return plantest.Parse(t, data)
}

// TestPackMatchesCheckOnRenderedStacks: on every rendered stack, and on the prod stack as a
// first preview shows it (every topic reference unknown, a label secret), the pack run
// through Pulumi's host reports what `eventpipe check` reports: nothing. Each resource
// alone lacks the grants and DLQ subscriptions around it, so a stack rule run by Analyze
// would report here.
func TestPackMatchesCheckOnRenderedStacks(t *testing.T) {
	p := mustStartPack(t, "")
	docs := map[string]plantest.Doc{}
	for _, stack := range []string{"dev", "staging", "prod"} {
		docs[stack] = renderStack(t, stack)
	}
	firstPreview := renderStack(t, "prod")
	hidden := 0
	for _, raw := range firstPreview["steps"].([]any) {
		inputs, _ := raw.(map[string]any)["newState"].(map[string]any)["inputs"].(map[string]any)
		for _, key := range []string{"topic", "subscription"} {
			if _, ok := inputs[key]; ok {
				inputs[key] = render.Unknown
				hidden++
			}
		}
		if dlp, ok := inputs["deadLetterPolicy"].(map[string]any); ok {
			dlp["deadLetterTopic"] = render.Unknown
		}
		if labels, ok := inputs["labels"].(map[string]any); ok {
			labels["owner"] = render.Secret
		}
	}
	if hidden == 0 {
		t.Fatal("no topic reference to hide")
	}
	docs["prod, first preview"] = firstPreview
	for name, doc := range docs {
		env, _, _ := strings.Cut(name, ",")
		want := check(t, doc, "--env", env)
		if got := p.analyze(t, doc); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the pack reported %q, eventpipe check %q", name, got, want)
		}
	}
}

// TestPackMatchesCheckOnMutations breaks the rendered prod stack one way per rule: the
// pack must report exactly what `eventpipe check` reports (rule, level, resource and
// message; no finding twice), which is the mutation's one rule.
func TestPackMatchesCheckOnMutations(t *testing.T) {
	p := mustStartPack(t, "")
	for _, m := range plantest.RenderedProdMutations() {
		t.Run(m.Name, func(t *testing.T) {
			doc := renderStack(t, "prod")
			m.Apply(t, doc)
			want := check(t, doc, "--env", "prod")
			got := p.analyze(t, doc)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("the pack reported\n%q\neventpipe check\n%q", got, want)
			}
			if g := ids(got); !reflect.DeepEqual(g, []string{m.Want}) {
				t.Fatalf("findings %v, want exactly [%s]", g, m.Want)
			}
		})
	}
}

// writeFile writes content to a file in a fresh temporary folder and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestPackThresholdsMatchCheckConfig: thresholds given as Pulumi policy configuration
// (`--policy-pack-config`) change the verdicts as the same thresholds in an `eventpipe
// check --config` file do, for a resource rule, a stack rule and an environment list.
func TestPackThresholdsMatchCheckConfig(t *testing.T) {
	for _, tt := range []struct {
		name, policyConfig, checkConfig string
		mutate                          func(t plantest.TB, doc plantest.Doc)
		want                            []string
	}{
		{
			name:         "delivery attempts range",
			policyConfig: `{"deny_dead_letter_attempts_out_of_range": {"min": 11, "max": 20}}`,
			checkConfig:  "thresholds:\n  deny_dead_letter_attempts_out_of_range: {min: 11, max: 20}\n",
			want:         []string{"deny:EP002"},
		},
		{
			name:         "DLQ retention of a stack rule",
			policyConfig: `{"stack_warn_dlq_retention_short": {"minimumDays": 30}}`,
			checkConfig:  "thresholds:\n  stack_warn_dlq_retention_short: {minimumDays: 30}\n",
			want:         []string{"warn:EP013"},
		},
		{
			name:         "strict environments",
			policyConfig: `{"deny_subscription_expires": {"environments": ["staging"]}}`,
			checkConfig:  "thresholds:\n  deny_subscription_expires: {environments: [staging]}\n",
			mutate: func(t plantest.TB, doc plantest.Doc) {
				doc.Inputs(t, plantest.SubscriptionType, plantest.PushSubscription)["expirationPolicy"] = map[string]any{"ttl": "2678400s"}
			},
			want: []string{"warn:EP011"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			doc := renderStack(t, "prod")
			if tt.mutate != nil {
				tt.mutate(t, doc)
			}
			if base := check(t, doc, "--env", "prod"); reflect.DeepEqual(ids(base), tt.want) {
				t.Fatalf("the stack gives %v without the thresholds: the test proves nothing", ids(base))
			}
			p := mustStartPack(t, writeFile(t, "policy-config.json", tt.policyConfig))
			want := check(t, doc, "--env", "prod", "--config", writeFile(t, "check.yaml", tt.checkConfig))
			got := p.analyze(t, doc)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("the pack reported\n%q\neventpipe check\n%q", got, want)
			}
			if g := ids(got); !reflect.DeepEqual(g, tt.want) {
				t.Fatalf("findings %v, want %v", g, tt.want)
			}
		})
	}
}

// TestPackJudgesUnlabelledDLQSubscriptionOnTheStack: a DLQ subscription without a retry
// policy or eventpipe's labels is recognised as one only by the subscription that
// dead-letters to its topic, which Analyze (one resource) cannot see: the pack must judge
// it where the whole stack is visible, and agree with `eventpipe check`.
func TestPackJudgesUnlabelledDLQSubscriptionOnTheStack(t *testing.T) {
	doc := renderStack(t, "prod")
	dlq := doc.Inputs(t, plantest.SubscriptionType, plantest.DLQSubscription)
	delete(dlq, "retryPolicy")
	delete(dlq, "labels")
	p := mustStartPack(t, "")
	want := check(t, doc, "--env", "prod")
	if got := p.analyze(t, doc); !reflect.DeepEqual(got, want) || len(got) != 0 {
		t.Fatalf("the pack reported\n%q\neventpipe check\n%q", got, want)
	}
	// (A subscription that is not a DLQ subscription still gets EP003 from the stack
	// analysis: see TestPackEnforcementLevels.)
}

// TestPackEnforcementLevels: policy configuration sets each policy mandatory, advisory or
// disabled, for resource and stack policies alike, and "all" sets every one.
func TestPackEnforcementLevels(t *testing.T) {
	doc := renderStack(t, "prod")
	delete(doc.Inputs(t, plantest.SubscriptionType, plantest.PushSubscription), "retryPolicy")                // EP003, judged on the stack
	doc.Inputs(t, plantest.SubscriptionType, plantest.DLQSubscription)["messageRetentionDuration"] = "86400s" // EP013, a stack rule
	doc.Drop(t, "gcp:pubsub/topicIAMMember:TopicIAMMember", plantest.PushSubscription+"-dlq-agent-publisher") // EP006, a stack rule
	for _, tt := range []struct {
		name, config string
		want         []string
	}{
		{"defaults", "", []string{"deny:EP003", "deny:EP006", "warn:EP013"}},
		{"per policy", `{"deny_retry_policy": "advisory", "stack_warn_dlq_retention_short": {"enforcementLevel": "mandatory"},
			"stack_deny_dead_letter_publisher_grant_missing": "disabled"}`, []string{"deny:EP013", "warn:EP003"}},
		{"remediate counts as mandatory", `{"stack_warn_dlq_retention_short": "remediate"}`, []string{"deny:EP003", "deny:EP006", "deny:EP013"}},
		{"all advisory", `{"all": "advisory"}`, []string{"warn:EP003", "warn:EP006", "warn:EP013"}},
		{"all disabled", `{"all": "disabled"}`, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			config := ""
			if tt.config != "" {
				config = writeFile(t, "policy-config.json", tt.config)
			}
			p := mustStartPack(t, config)
			if got := ids(p.analyze(t, doc)); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("findings %v, want %v", got, tt.want)
			}
		})
	}
}

// TestPackRejectsBadConfig: configuration Pulumi would pass on but that would leave a
// threshold at its default or contradict itself is rejected by Configure, naming the
// policy, the setting and the fix, so the preview fails instead of silently enforcing
// less. Values of the wrong type fail Pulumi's own validation against the pack's schemas,
// and Configure's.
func TestPackRejectsBadConfig(t *testing.T) {
	for _, tt := range []struct {
		name, config  string
		pulumiRejects bool
		want          string
	}{
		{"settings under properties", `{"deny_dead_letter_attempts_out_of_range": {"properties": {"min": 5, "max": 10}}}`, false,
			`settings go directly under the policy name, not under "properties"`},
		{"misspelt setting", `{"deny_retry_policy": {"minimumBackoff": 10}}`, false,
			`no setting "minimumBackoff"; its settings are maximumBackoffSeconds, minimumBackoffSeconds`},
		{"setting of a rule without settings", `{"deny_push_without_oidc": {"audience": "x"}}`, false, "it takes only enforcementLevel"},
		{"range upside down", `{"deny_dead_letter_attempts_out_of_range": {"min": 20, "max": 10}}`, false, "min 20 is above max 10"},
		{"unknown policy", `{"deny_missing_dlq": "mandatory"}`, false, `policy "deny_missing_dlq": no such policy`},
		{"wrong type", `{"deny_dead_letter_attempts_out_of_range": {"min": "five"}}`, true, `setting "min" = five`},
		{"out of Pub/Sub's range", `{"deny_dead_letter_attempts_out_of_range": {"max": 500}}`, true, `setting "max" = 500`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, invalid, err := startPack(t, packDir(t), writeFile(t, "policy-config.json", tt.config))
			if (len(invalid) > 0) != tt.pulumiRejects {
				t.Errorf("Pulumi's validation errors %v, want some: %v", invalid, tt.pulumiRejects)
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Configure: %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestPackInfo: the pack offers one policy per rule, named by the rule, mandatory for deny
// rules and advisory for warn rules, typed resource or stack, with the config schema of
// each configurable rule visible to Pulumi.
func TestPackInfo(t *testing.T) {
	p := mustStartPack(t, "")
	if p.info.Name != "eventpipe" || p.info.Version != "1.0.0" {
		t.Fatalf("pack %s %s", p.info.Name, p.info.Version)
	}
	byName := map[string]plugin.AnalyzerPolicyInfo{}
	for _, pol := range p.info.Policies {
		byName[pol.Name] = pol
	}
	for _, tt := range []struct {
		name  string
		level apitype.EnforcementLevel
		typ   plugin.AnalyzerPolicyType
		keys  []string
	}{
		{"stack_deny_missing_dead_letter_policy", apitype.Mandatory, plugin.AnalyzerPolicyTypeStack, nil},
		{"deny_dead_letter_attempts_out_of_range", apitype.Mandatory, plugin.AnalyzerPolicyTypeResource, []string{"max", "min"}},
		{"warn_subscription_expires", apitype.Advisory, plugin.AnalyzerPolicyTypeResource, nil},
		{"stack_warn_dlq_retention_short", apitype.Advisory, plugin.AnalyzerPolicyTypeStack, []string{"minimumDays"}},
		{"stack_deny_subscription_without_dlq_alert", apitype.Mandatory, plugin.AnalyzerPolicyTypeStack, []string{"enforce", "environments"}},
		// A rule on operations, which a pack cannot enforce, is advisory.
		{"deny_subscription_removed", apitype.Advisory, plugin.AnalyzerPolicyTypeResource, []string{"enforce", "environments"}},
	} {
		pol, ok := byName[tt.name]
		if !ok {
			t.Errorf("no policy %s", tt.name)
			continue
		}
		if pol.EnforcementLevel != tt.level || pol.Type != tt.typ {
			t.Errorf("%s: %s %v, want %s %v", tt.name, pol.EnforcementLevel, pol.Type, tt.level, tt.typ)
		}
		var keys []string
		for k := range pol.ConfigSchema.Properties {
			if k != "enforcementLevel" { // Pulumi adds it to every schema
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		if !reflect.DeepEqual(keys, tt.keys) {
			t.Errorf("%s: settings %v, want %v", tt.name, keys, tt.keys)
		}
	}
}

// TestPluginDiscovery: Pulumi finds the plugin by runtime name in its plugin cache as well
// as on PATH (where the other tests find it), and fails with its own message when neither
// has it.
func TestPluginDiscovery(t *testing.T) {
	dir := packDir(t)
	home := t.TempDir()
	t.Setenv("PULUMI_HOME", home)
	t.Setenv("PULUMI_IGNORE_AMBIENT_PLUGINS", "true")
	sink := diag.DefaultSink(&bytes.Buffer{}, &bytes.Buffer{}, diag.FormatOptions{Color: colors.Never})
	start := func() error {
		pctx, err := plugin.NewContext(context.Background(), sink, sink, nil, nil, dir, nil, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer pctx.Close()
		an, err := pctx.Host.PolicyAnalyzer(tokens.QName(dir), dir, nil)
		if err != nil {
			return err
		}
		_, err = an.GetAnalyzerInfo()
		return err
	}
	if err := start(); err == nil || !strings.Contains(err.Error(), "analyzer plugin that runs policy plugins is missing") {
		t.Fatalf("with no plugin installed: %v", err)
	}
	// `pulumi plugin install analyzer policy-eventpipe 1.0.0 --file BINARY` puts it here.
	cached := filepath.Join(home, "plugins", "analyzer-policy-eventpipe-v1.0.0")
	if err := os.MkdirAll(cached, 0o755); err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(filepath.Join(binDir, "pulumi-analyzer-policy-eventpipe"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cached, "pulumi-analyzer-policy-eventpipe"), bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := start(); err != nil {
		t.Fatalf("from the plugin cache: %v", err)
	}
}

// TestPackCancel: after Pulumi cancels the operation, analyses fail instead of passing.
func TestPackCancel(t *testing.T) {
	p := mustStartPack(t, "")
	stack := resources(t, renderStack(t, "prod"))
	if err := p.analyzer.Cancel(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := p.analyzer.AnalyzeStack(stack); err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("AnalyzeStack after Cancel: %v", err)
	}
}

// TestReadmePolicyConfig: the --policy-pack-config example of docs/policies.md is valid, and the
// prod stack passes under it.
func TestReadmePolicyConfig(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "docs", "policies.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Running the rules under pulumi preview\n")
	if !ok {
		t.Fatal("docs/policies.md has no section Running the rules under pulumi preview")
	}
	_, block, ok := strings.Cut(section, "\n```json\n")
	if !ok {
		t.Fatal("the section has no json example")
	}
	block, _, _ = strings.Cut(block, "\n```")
	p := mustStartPack(t, writeFile(t, "policy-config.json", block))
	if got := p.analyze(t, renderStack(t, "prod")); len(got) != 0 {
		t.Fatalf("prod under the policy configuration of docs/policies.md: %q", got)
	}
	levels := map[string]apitype.EnforcementLevel{}
	for _, pol := range p.info.Policies {
		levels[pol.Name] = pol.EnforcementLevel
	}
	if levels["stack_warn_dlq_retention_short"] != apitype.Mandatory || levels["warn_dead_letter_opt_out"] != apitype.Disabled {
		t.Fatalf("the example's enforcement levels were not applied: %v", levels)
	}
}

// TestPackSaysItCannotSeeRemovals: an analyzer never sees a step's operation, so the pack
// cannot enforce EP016/EP017: a replaced subscription passes it while eventpipe check
// denies it. They are advisory; a configuration asking for either to be mandatory (or
// enforced everywhere) is refused at load, naming the rule and the eventpipe check
// command. While they are advisory, the stack analysis says so in an advisory diagnostic
// naming the eventpipe check step; disabling them silences it.
func TestPackSaysItCannotSeeRemovals(t *testing.T) {
	doc := renderStack(t, "prod")
	doc.SetOp(t, plantest.SubscriptionType, plantest.PushSubscription, "replace")
	if got := ids(check(t, doc)); !reflect.DeepEqual(got, []string{"deny:EP016"}) {
		t.Fatalf("eventpipe check: %v, want deny:EP016", got)
	}
	// A configuration asking for them to be enforced is refused at load, naming the rule
	// and the command that enforces it.
	for _, tt := range []struct{ name, config, rule string }{
		{"EP016 mandatory", `{"deny_subscription_removed": "mandatory"}`, `"deny_subscription_removed" (EP016) is configured mandatory`},
		{"EP016 mandatory with enforce", `{"deny_subscription_removed": {"enforcementLevel": "mandatory", "enforce": true}}`, `"deny_subscription_removed" (EP016) is configured mandatory`},
		{"EP016 enforce, advisory", `{"deny_subscription_removed": {"enforcementLevel": "advisory", "enforce": true}}`, `"deny_subscription_removed" (EP016) is configured enforced everywhere`},
		{"EP017 mandatory", `{"warn_subscription_removed": {"enforcementLevel": "mandatory"}}`, `"warn_subscription_removed" (EP017) is configured mandatory`},
		{"all mandatory", `{"all": "mandatory"}`, `"deny_subscription_removed" (EP016) is configured mandatory (directly or through "all")`},
	} {
		t.Run("refused: "+tt.name, func(t *testing.T) {
			_, _, err := startPack(t, packDir(t), writeFile(t, "policy-config.json", tt.config))
			if err == nil || !strings.Contains(err.Error(), tt.rule) || !strings.Contains(err.Error(), "`pulumi preview --json --show-sames | eventpipe check -`") {
				t.Fatalf("Configure: %v, want it refused naming %s and the eventpipe check command", err, tt.rule)
			}
		})
	}
	for _, tt := range []struct {
		name, config string
		want         []string
	}{
		{"defaults", "", []string{"EP016", "EP017"}},
		{"all mandatory but these", `{"all": "mandatory", "deny_subscription_removed": "advisory", "warn_subscription_removed": "advisory"}`, []string{"EP016", "EP017"}},
		{"advisory", `{"deny_subscription_removed": "advisory"}`, []string{"EP016", "EP017"}},
		{"disabled", `{"deny_subscription_removed": "disabled", "warn_subscription_removed": "disabled"}`, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			config := ""
			if tt.config != "" {
				config = writeFile(t, "policy-config.json", tt.config)
			}
			p := mustStartPack(t, config)
			if got := p.analyze(t, doc); len(got) != 0 {
				t.Errorf("findings %v: the pack sees no operations", got)
			}
			var got []string
			for _, n := range p.notices {
				id, msg, _ := strings.Cut(n, " ")
				got = append(got, id)
				if !strings.Contains(msg, "eventpipe check") || !strings.Contains(msg, "never enforced by `pulumi preview --policy-pack`") {
					t.Errorf("%s notice %q does not say why or what enforces it", id, msg)
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("notices on %v, want %v", got, tt.want)
			}
		})
	}
}
