package render

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/eventpipe/eventpipe/internal/gcpname"
	"github.com/eventpipe/eventpipe/internal/srcpos"
	"github.com/eventpipe/eventpipe/spec"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// Mocks is a pulumi.MockResourceMonitor that gives every resource the
// identifiers and outputs Google Cloud would (projects/P/topics/T, service
// account emails, Cloud Run URLs) deterministically, and records every
// registration so a Plan can be built from them. Safe for concurrent use.
type Mocks struct {
	project string
	stack   string
	// numbers maps project ids to project numbers for Cloud Run URLs.
	numbers map[string]string

	mu        sync.Mutex
	resources []Registered
}

// Registered is one resource registration seen by Mocks.
type Registered struct {
	URN                  string
	Type                 string
	Name                 string
	Custom               bool
	Parent               string
	Protect              bool
	Aliases              []string
	Inputs               resource.PropertyMap
	Dependencies         []string
	PropertyDependencies map[string][]string
	// ReplaceOnChanges are the inputs whose change replaces the resource.
	ReplaceOnChanges []string
	// Frames are the Go call stack of the registration, innermost first, as the
	// Pulumi SDK sends it to the engine (RegisterResourceRequest's stackTrace, or
	// its sourcePosition alone). Not part of what is declared: the same resource
	// declared through another door (the provider plugin) has other frames.
	Frames []srcpos.Frame `json:"-"`
}

var _ pulumi.MockResourceMonitor = (*Mocks)(nil)

// NewMocks returns Mocks for a run of project/stack; st supplies the project
// number used in Cloud Run URLs (nil is allowed).
func NewMocks(project, stack string, st *spec.Stack) *Mocks {
	m := &Mocks{project: project, stack: stack, numbers: map[string]string{}}
	if st != nil {
		m.numbers[st.Project] = st.ProjectNumber
	}
	return m
}

// Resources returns the registrations so far, ordered by URN.
func (m *Mocks) Resources() []Registered {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := append([]Registered(nil), m.resources...)
	slices.SortFunc(out, func(a, b Registered) int { return strings.Compare(a.URN, b.URN) })
	return out
}

// Call answers provider function invokes: getProject, which the components
// read the project number from to check the configured one, answers with
// the number of the stack's project and without a number for a project
// the render does not know (nothing to check against then).
func (m *Mocks) Call(args pulumi.MockCallArgs) (resource.PropertyMap, error) {
	if args.Token == "gcp:organizations/getProject:getProject" {
		project := ""
		if v, ok := args.Args["projectId"]; ok && v.IsString() {
			project = v.StringValue()
		}
		out := resource.PropertyMap{"projectId": resource.NewStringProperty(project), "id": resource.NewStringProperty("projects/" + project)}
		if number := m.numbers[project]; number != "" {
			out["number"] = resource.NewStringProperty(number)
		}
		return out, nil
	}
	return nil, fmt.Errorf("offline render: unexpected provider function call %s", args.Token)
}

// NewResource records the registration and returns a deterministic id and state.
func (m *Mocks) NewResource(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	reg := Registered{Type: args.TypeToken, Name: args.Name, Custom: args.Custom, Inputs: args.Inputs}
	if rpc := args.RegisterRPC; rpc != nil {
		reg.Parent = rpc.GetParent()
		reg.Protect = rpc.GetProtect()
		for _, a := range rpc.GetAliases() {
			if spec := a.GetSpec(); spec != nil {
				reg.Aliases = append(reg.Aliases, spec.GetType())
			}
		}
		reg.Dependencies = sortedUnique(rpc.GetDependencies())
		reg.ReplaceOnChanges = rpc.GetReplaceOnChanges()
		reg.Frames = frames(rpc)
		reg.PropertyDependencies = map[string][]string{}
		for k, v := range rpc.GetPropertyDependencies() {
			if urns := sortedUnique(v.GetUrns()); len(urns) > 0 {
				reg.PropertyDependencies[k] = urns
			}
		}
	}
	reg.URN = m.urn(reg.Parent, reg.Type, reg.Name)
	m.mu.Lock()
	m.resources = append(m.resources, reg)
	m.mu.Unlock()
	if !args.Custom {
		return "", resource.PropertyMap{}, nil
	}
	id, outputs := m.outputs(args.TypeToken, args.Name, args.Inputs)
	state := args.Inputs.Copy()
	for k, v := range outputs {
		state[resource.PropertyKey(k)] = resource.NewStringProperty(v)
	}
	return id, state, nil
}

// urn builds the URN the mock monitor gives a resource.
func (m *Mocks) urn(parent, typ, name string) string {
	parentType := tokens.Type("")
	if p := resource.URN(parent); p != "" && p.QualifiedType() != resource.RootStackType {
		parentType = p.QualifiedType()
	}
	return string(resource.NewURN(tokens.QName(m.stack), tokens.PackageName(m.project), parentType, tokens.Type(typ), name))
}

// outputs returns the id and the computed outputs Google Cloud would give.
func (m *Mocks) outputs(typ, name string, in resource.PropertyMap) (string, map[string]string) {
	str := func(k string) string {
		v := in[resource.PropertyKey(k)] // absent: the zero value, not a string
		if v.IsSecret() {
			v = v.SecretValue().Element
		}
		if v.IsString() {
			return v.StringValue()
		}
		return ""
	}
	project := str("project")
	switch typ {
	case "gcp:pubsub/topic:Topic":
		return "projects/" + project + "/topics/" + str("name"), nil
	case "gcp:pubsub/subscription:Subscription":
		return "projects/" + project + "/subscriptions/" + str("name"), nil
	case "gcp:serviceaccount/account:Account":
		email := str("accountId") + "@" + project + ".iam.gserviceaccount.com"
		id := "projects/" + project + "/serviceAccounts/" + email
		return id, map[string]string{"email": email, "name": id, "member": "serviceAccount:" + email, "uniqueId": digits(email)}
	case "gcp:cloudrunv2/service:Service":
		id := "projects/" + project + "/locations/" + str("location") + "/services/" + str("name")
		return id, map[string]string{"uri": gcpname.RunServiceURL(str("name"), m.number(project), str("location"))}
	case "gcp:secretmanager/secret:Secret":
		id := "projects/" + project + "/secrets/" + str("secretId")
		return id, map[string]string{"name": id}
	case "gcp:secretmanager/secretVersion:SecretVersion":
		id := str("secret") + "/versions/1"
		return id, map[string]string{"name": id, "version": "1"}
	case "gcp:monitoring/notificationChannel:NotificationChannel":
		id := "projects/" + project + "/notificationChannels/" + digits(name)
		return id, map[string]string{"name": id}
	case "gcp:projects/serviceIdentity:ServiceIdentity":
		agent := strings.TrimSuffix(str("service"), ".googleapis.com")
		email := "service-" + m.number(project) + "@gcp-sa-" + agent + ".iam.gserviceaccount.com"
		return "projects/" + project + "/services/" + str("service"), map[string]string{"email": email, "member": "serviceAccount:" + email}
	case "gcp:firestore/field:Field":
		id := "projects/" + project + "/databases/" + str("database") + "/collectionGroups/" + str("collection") + "/fields/" + str("field")
		return id, map[string]string{"name": id}
	}
	if strings.Contains(strings.ToLower(typ), "iammember") {
		target := str("topic") + str("subscription") + str("serviceAccountId") + str("name") + str("project")
		return target + "/" + str("role") + "/" + str("member"), map[string]string{"etag": "BwX" + digits(target + str("member"))[:8]}
	}
	return name, map[string]string{"name": name}
}

// number is project's number: the stack's, or one derived from the id.
func (m *Mocks) number(project string) string {
	if n := m.numbers[project]; n != "" {
		return n
	}
	return digits(project)
}

// digits derives a stable 12-digit number from s (unique ids, project numbers).
func digits(s string) string {
	sum := sha256.Sum256([]byte(s))
	var b strings.Builder
	for _, c := range hex.EncodeToString(sum[:]) {
		if c >= '0' && c <= '9' {
			b.WriteRune(c)
		}
	}
	out := b.String() + "000000000000"
	return "1" + out[:11]
}

// frames are the registration's stack frames as the SDK recorded them, innermost
// first; its source position alone when it sent no stack trace.
func frames(rpc *pulumirpc.RegisterResourceRequest) []srcpos.Frame {
	var out []srcpos.Frame
	for _, f := range rpc.GetStackTrace().GetFrames() {
		if fr, ok := srcpos.FromURI(f.GetPc().GetUri(), int(f.GetPc().GetLine())); ok {
			out = append(out, fr)
		}
	}
	if len(out) == 0 {
		if fr, ok := srcpos.FromURI(rpc.GetSourcePosition().GetUri(), int(rpc.GetSourcePosition().GetLine())); ok {
			out = append(out, fr)
		}
	}
	return out
}

func sortedUnique(in []string) []string {
	out := slices.DeleteFunc(append([]string{}, in...), func(s string) bool { return s == "" })
	slices.Sort(out)
	return slices.Compact(out)
}
