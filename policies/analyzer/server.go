// Package analyzer is eventpipe's Pulumi analyzer plugin: Pulumi's Analyzer gRPC service
// running eventpipe's policy rules (the *.rego files of the policy pack folder) with the
// engine `eventpipe check` uses, so `pulumi preview --policy-pack policies` enforces what
// the pull-request check enforces.
//
// How Pulumi runs it (pulumi/pulumi sdk/v3 and pkg/v3 v3.200.0):
//   - sdk/go/common/resource/plugin/analyzer_plugin.go, NewPolicyAnalyzer: the pack's
//     PulumiPolicy.yaml names runtime "eventpipe"; with no language plugin of that name
//     (pulumi-language-eventpipe) the CLI starts the analyzer plugin
//     pulumi-analyzer-policy-<runtime>, in the pack folder, with the arguments
//     ENGINE_ADDRESS "." and one -KEY=VALUE per runtime option of PulumiPolicy.yaml.
//   - sdk/go/common/workspace/plugins.go, getPluginInfoAndPath: the binary is found on
//     $PATH (unless PULUMI_IGNORE_AMBIENT_PLUGINS is true), next to the pulumi binary, or
//     in the plugin cache (~/.pulumi/plugins/analyzer-policy-eventpipe-v<version>/).
//   - sdk/go/common/resource/plugin/plugin.go, ExecPlugin and newPlugin: flags
//     --logtostderr, -v=N and --tracing ENDPOINT may come before those arguments; the
//     plugin writes the port it serves gRPC on, and a newline, as its first output on
//     stdout; everything after that and all of stderr is shown to the user.
//   - then Handshake (root and program directory: the pack folder), ConfigureStack (stack,
//     project, dry run), GetPluginInfo, GetAnalyzerInfo; with SupportsConfig the CLI
//     reconciles --policy-pack-config with the policies' config schemas
//     (pkg/resource/analyzer/config.go: every policy gets an entry, settings sit directly
//     under the policy name, "all" sets every level) and calls Configure
//     (pkg/engine/update.go, installAndLoadPolicyPlugins).
//   - pkg/resource/deploy/step_generator.go: Analyze is called for every resource with its
//     inputs before it is created or updated (a mandatory finding stops it on `up`, fails
//     `preview`); AnalyzeStack once, after every step succeeded, with every resource's
//     outputs, parent and dependencies.
//
// Resource rules therefore answer Analyze and stack rules AnalyzeStack, so each finding is
// reported once and a rule that needs the whole stack never judges a lone resource.
//
// Neither request carries a step's operation (create, update, delete, replace): the rules
// on deletions and replacements (custom.needs_operations: EP016, EP017) can never fire
// here. They are advisory by default, and a configuration that asks for one to be
// mandatory is refused by Configure; while one is advisory, AnalyzeStack says so in an
// advisory diagnostic (unseenNotice), and Configure logs it.
package analyzer

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"

	"github.com/eventpipe/eventpipe/policies/evaluate"
)

// PackName is the policy pack's name in Pulumi's output.
const PackName = "eventpipe"

// docsURL documents the rules and running them under Pulumi.
const docsURL = "https://github.com/eventpipe/eventpipe#running-the-rules-under-pulumi-preview"

// Pack describes the policy pack the server runs.
type Pack struct {
	// Dir is the policy pack folder: PulumiPolicy.yaml and the rule files.
	Dir string
	// Version and Description come from PulumiPolicy.yaml.
	Version     string
	Description string
	// PluginVersion is the analyzer binary's version.
	PluginVersion string
}

// Server implements Pulumi's Analyzer service. It is safe for concurrent use: Pulumi
// analyzes resources in parallel.
type Server struct {
	pulumirpc.UnimplementedAnalyzerServer

	pack    Pack
	modules map[string]string
	log     *slog.Logger

	mu     sync.RWMutex
	rules  *ruleSet
	config policyConfig
	// cancel ends the evaluations under way (Cancel); ctx is what they run under.
	ctx    context.Context
	cancel context.CancelFunc
}

// NewServer loads and compiles the rule files of the pack folder with their defaults.
func NewServer(ctx context.Context, pack Pack, log *slog.Logger) (*Server, error) {
	modules, err := loadModules(pack.Dir)
	if err != nil {
		return nil, err
	}
	rules, err := compileRules(ctx, modules, nil)
	if err != nil {
		return nil, fmt.Errorf("policy pack %s: %w", pack.Dir, err)
	}
	sctx, cancel := context.WithCancel(context.Background())
	s := &Server{pack: pack, modules: modules, log: log, rules: rules, config: defaultConfig(rules.rules), ctx: sctx, cancel: cancel}
	log.Info("policy pack loaded", slog.String("dir", pack.Dir), slog.Int("rules", len(rules.rules)), slog.Int("files", len(modules)))
	return s, nil
}

// current returns the rules and configuration in force.
func (s *Server) current() (*ruleSet, policyConfig) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.rules, s.config
}

// Handshake accepts the engine's greeting; the pack folder is already known from the
// command line.
func (s *Server) Handshake(_ context.Context, req *pulumirpc.AnalyzerHandshakeRequest) (*pulumirpc.AnalyzerHandshakeResponse, error) {
	s.log.Info("handshake", slog.String("root", req.GetRootDirectory()), slog.String("program", req.GetProgramDirectory()))
	return &pulumirpc.AnalyzerHandshakeResponse{}, nil
}

// ConfigureStack records which stack is analyzed.
func (s *Server) ConfigureStack(_ context.Context, req *pulumirpc.AnalyzerStackConfigureRequest) (*pulumirpc.AnalyzerStackConfigureResponse, error) {
	s.log.Info("stack", slog.String("organization", req.GetOrganization()), slog.String("project", req.GetProject()),
		slog.String("stack", req.GetStack()), slog.Bool("dryRun", req.GetDryRun()))
	return &pulumirpc.AnalyzerStackConfigureResponse{}, nil
}

// GetPluginInfo reports the plugin's version.
func (s *Server) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: s.pack.PluginVersion}, nil
}

// GetAnalyzerInfo describes the pack and one policy per rule, named by the rule (the key
// of its policy configuration), with its default enforcement, type and config schema.
func (s *Server) GetAnalyzerInfo(context.Context, *emptypb.Empty) (*pulumirpc.AnalyzerInfo, error) {
	rules, _ := s.current()
	info := &pulumirpc.AnalyzerInfo{
		Name: PackName, DisplayName: "eventpipe policies", Version: s.pack.Version, Description: s.pack.Description,
		SupportsConfig: true, Provider: "gcp", Repository: "https://github.com/eventpipe/eventpipe",
		Tags: []string{"pubsub", "dead-letter", "cloud-run", "firestore"},
	}
	for _, r := range rules.rules {
		schema, err := configSchema(r)
		if err != nil {
			return nil, err
		}
		policyType := pulumirpc.PolicyType_POLICY_TYPE_RESOURCE
		if stackRule(r) {
			policyType = pulumirpc.PolicyType_POLICY_TYPE_STACK
		}
		info.Policies = append(info.Policies, &pulumirpc.PolicyInfo{
			Name: r.Name, DisplayName: r.ID + " " + r.Title, Description: r.Description, Message: r.Fix,
			EnforcementLevel: defaultLevel(r), ConfigSchema: schema, PolicyType: policyType,
			Severity: severity(r.Severity), Tags: []string{r.ID, r.Severity}, RemediationSteps: r.Fix, Url: docsURL,
		})
	}
	return info, nil
}

// severity maps a rule severity to Pulumi's of the same name: critical, high, medium and
// low; info has none, so it is unspecified.
func severity(s string) pulumirpc.PolicySeverity {
	return pulumirpc.PolicySeverity(pulumirpc.PolicySeverity_value["POLICY_SEVERITY_"+strings.ToUpper(s)])
}

// Configure applies policy configuration: enforcement levels, and the settings, which
// become data.config for a freshly compiled rule set. Invalid configuration is rejected
// whole, with every mistake named, and the previous configuration stays in force.
func (s *Server) Configure(ctx context.Context, req *pulumirpc.ConfigureAnalyzerRequest) (*emptypb.Empty, error) {
	rules, _ := s.current()
	config, err := parseConfig(rules.rules, req.GetPolicyConfig())
	if err != nil {
		s.log.Error("policy configuration rejected", slog.String("error", err.Error()))
		return nil, invalidArgument(fmt.Errorf("eventpipe policy configuration: %w", err))
	}
	compiled, err := compileRules(ctx, s.modules, config.data)
	if err != nil {
		return nil, internal(err)
	}
	s.mu.Lock()
	s.rules, s.config = compiled, config
	s.mu.Unlock()
	disabled := 0
	for _, l := range config.levels {
		if l == pulumirpc.EnforcementLevel_DISABLED {
			disabled++
		}
	}
	for _, r := range unseenRules(compiled.rules, config) {
		s.log.Warn("policy never seen by an analyzer", slog.String("policy", r.Name), slog.String("id", r.ID), slog.String("why", unseenNotice))
	}
	s.log.Info("configured", slog.Int("policies", len(config.levels)), slog.Int("disabled", disabled), slog.Any("settings", config.data))
	return &emptypb.Empty{}, nil
}

// Analyze runs the resource rules on one resource (its inputs).
func (s *Server) Analyze(ctx context.Context, req *pulumirpc.AnalyzeRequest) (*pulumirpc.AnalyzeResponse, error) {
	r := &pulumirpc.AnalyzerResource{Urn: req.GetUrn(), Type: req.GetType(), Properties: req.GetProperties()}
	return s.analyze(ctx, "resource "+req.GetUrn(), []*pulumirpc.AnalyzerResource{r}, false, req.GetUrn())
}

// AnalyzeStack runs the stack rules on every resource of the stack (their outputs).
func (s *Server) AnalyzeStack(ctx context.Context, req *pulumirpc.AnalyzeStackRequest) (*pulumirpc.AnalyzeResponse, error) {
	return s.analyze(ctx, "stack", req.GetResources(), true, "")
}

// analyze evaluates the rules on resources and reports the findings of the stack rules
// (stack) or of the resource rules (not stack), at their configured levels; disabled
// policies report nothing. urn, when set, is the resource every finding is about.
func (s *Server) analyze(ctx context.Context, what string, resources []*pulumirpc.AnalyzerResource, stack bool, urn string) (*pulumirpc.AnalyzeResponse, error) {
	start := time.Now()
	doc, err := stackExport(resources)
	if err != nil {
		return nil, invalidArgument(fmt.Errorf("%s: %w", what, err))
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	defer context.AfterFunc(s.ctx, stop)() // Cancel stops it too
	rules, config := s.current()
	found, err := rules.evaluate(ctx, doc, what)
	if err != nil {
		s.log.Error("analysis failed", slog.String("of", what), slog.String("error", err.Error()))
		return nil, internal(err)
	}
	resp := &pulumirpc.AnalyzeResponse{}
	for _, f := range found {
		r := f.Rule
		level := config.levels[r.Name]
		if stackRule(r) != stack || level == pulumirpc.EnforcementLevel_DISABLED {
			continue
		}
		about := f.URN
		if urn != "" {
			about = urn
		}
		resp.Diagnostics = append(resp.Diagnostics, &pulumirpc.AnalyzeDiagnostic{
			PolicyName: r.Name, PolicyPackName: PackName, PolicyPackVersion: s.pack.Version,
			Description: r.Description, Message: fmt.Sprintf("%s %s\nFix: %s", r.ID, f.Message, r.Fix),
			EnforcementLevel: level, Urn: about,
		})
	}
	if stack {
		for _, r := range unseenRules(rules.rules, config) {
			resp.Diagnostics = append(resp.Diagnostics, &pulumirpc.AnalyzeDiagnostic{
				PolicyName: r.Name, PolicyPackName: PackName, PolicyPackVersion: s.pack.Version,
				Description: r.Description, Message: unseenMessage(r),
				EnforcementLevel: pulumirpc.EnforcementLevel_ADVISORY,
			})
		}
	}
	level := slog.LevelDebug
	if stack || len(resp.Diagnostics) > 0 {
		level = slog.LevelInfo
	}
	s.log.Log(ctx, level, "analyzed", slog.String("of", what), slog.Int("resources", len(resources)),
		slog.Int("findings", len(resp.Diagnostics)), slog.Duration("took", time.Since(start)))
	return resp, nil
}

// Remediate changes nothing: the rules report, they do not rewrite resources.
func (s *Server) Remediate(context.Context, *pulumirpc.AnalyzeRequest) (*pulumirpc.RemediateResponse, error) {
	return &pulumirpc.RemediateResponse{}, nil
}

// Cancel aborts the evaluations under way and any that start later.
func (s *Server) Cancel(context.Context, *emptypb.Empty) (*emptypb.Empty, error) {
	s.log.Info("cancelled")
	s.cancel()
	return &emptypb.Empty{}, nil
}

// invalidArgument is err as a gRPC InvalidArgument status, whose message Pulumi shows.
func invalidArgument(err error) error { return status.Error(codes.InvalidArgument, err.Error()) }

// internal is err as a gRPC Internal status.
func internal(err error) error { return status.Error(codes.Internal, err.Error()) }

// unseenWhy says why a rule on operations never fires under an analyzer.
const unseenWhy = "Pulumi gives a policy pack each resource's goal state, never a step's operation, " +
	"so deletions and replacements are not seen and this policy is never enforced by `pulumi preview --policy-pack`."

// unseenNotice is unseenWhy and what enforces such a rule instead.
const unseenNotice = unseenWhy + " " +
	"Enforce it in CI with `pulumi preview --json --show-sames > preview.json && eventpipe check preview.json` " +
	"(or `pulumi preview --json --show-sames | eventpipe check -`); set the policy to disabled in the pack's configuration to silence this notice."

// unseenMessage is the advisory diagnostic on rule r, enforced but never seen.
func unseenMessage(r evaluate.Rule) string {
	return fmt.Sprintf("%s not enforced here: %s\nFix: %s", r.ID, unseenNotice, r.Fix)
}

// unseenRules are the rules on operations that config does not disable.
func unseenRules(rules []evaluate.Rule, config policyConfig) []evaluate.Rule {
	var out []evaluate.Rule
	for _, r := range rules {
		if r.NeedsOperations && config.levels[r.Name] != pulumirpc.EnforcementLevel_DISABLED {
			out = append(out, r)
		}
	}
	return out
}
