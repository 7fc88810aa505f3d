// Package cai reads a whole organisation's Pub/Sub estate from Cloud Asset Inventory
// output files, with no per-project API call:
//
//   - `gcloud asset export --content-type=resource` writes one google.cloud.asset.v1.Asset
//     per line (newline-delimited JSON); each resource's data is the REST representation
//     of the resource (a Pub/Sub Subscription, a Cloud Run Service, an AlertPolicy).
//   - `gcloud asset export --content-type=iam-policy` writes one Asset per line with the
//     iam_policy of every resource that has one.
//   - `gcloud asset search-all-resources --format=json` prints a JSON array of
//     ResourceSearchResult: name, project, labels, and the resource's data only when
//     asked for (--read-mask='*' or versionedResources). Without the data a result's
//     settings are unknown: the rules give no verdict on them.
//
// Lines are decoded with Google's own Asset and resource types, so a file of another
// shape is an error naming the file and line. A JSON array of Assets (`gcloud asset list
// --format=json`) is read as well.
package cai

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"cloud.google.com/go/asset/apiv1/assetpb"
	"cloud.google.com/go/iam/apiv1/iampb"
	"cloud.google.com/go/monitoring/apiv3/v2/monitoringpb"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/run/apiv2/runpb"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/eventpipe/eventpipe/audit/inventory"
)

// The asset types an audit reads.
const (
	assetTopic        = "pubsub.googleapis.com/Topic"
	assetSubscription = "pubsub.googleapis.com/Subscription"
	assetService      = "run.googleapis.com/Service"
	assetAlertPolicy  = "monitoring.googleapis.com/AlertPolicy"
	assetProject      = "cloudresourcemanager.googleapis.com/Project"
)

// Files are the Cloud Asset Inventory outputs to read.
type Files struct {
	// Resources are `gcloud asset export --content-type=resource` outputs.
	Resources []string
	// IAM are `gcloud asset export --content-type=iam-policy` outputs.
	IAM []string
	// Search are `gcloud asset search-all-resources --format=json` outputs.
	Search []string
}

// Read reads the files into one inventory. IAM export files, when given, are taken to
// cover every project the other files hold: a topic or subscription with no policy line
// has no IAM policy set. Without them every policy is unknown.
func Read(files Files) (*inventory.Inventory, error) {
	if len(files.Resources)+len(files.IAM)+len(files.Search) == 0 {
		return nil, errors.New("cai: no Cloud Asset Inventory file given")
	}
	r := &reader{inv: &inventory.Inventory{}, numbers: map[string]string{}, services: map[string]*runpb.Service{}, exported: map[string]bool{}}
	for _, f := range files.Search {
		if err := r.file(f, r.searchResult); err != nil {
			return nil, err
		}
	}
	// Exported resources come after search results: where both name a resource, the
	// export's full data wins.
	for _, f := range files.Resources {
		if err := r.file(f, r.resourceAsset); err != nil {
			return nil, err
		}
	}
	for _, f := range files.IAM {
		if err := r.file(f, r.policyAsset); err != nil {
			return nil, err
		}
	}
	if err := r.finish(len(files.IAM) > 0); err != nil {
		return nil, err
	}
	names := append(append(append([]string{}, files.Resources...), files.IAM...), files.Search...)
	r.inv.Source = "cloud asset inventory " + strings.Join(names, ", ")
	r.inv.Sort()
	return r.inv, nil
}

type reader struct {
	inv *inventory.Inventory
	// numbers maps project numbers to IDs, learnt from asset names and ancestors.
	numbers map[string]string
	// policies are the IAM policies read, by full resource name (project part as found).
	policies []policyLine
	// alertPolicies is true once any alert policy asset was read.
	alertPolicies bool
	// services are the Cloud Run services read, by full name.
	services map[string]*runpb.Service
	// pending are the assets whose project is named by number, resolved in finish.
	pending []func() error
	// exported holds the projects the resource export covers (some asset of theirs is in
	// it): their alert policies and IAM policies are taken as complete.
	exported map[string]bool
}

type policyLine struct {
	project, name string
	policy        *iampb.Policy
}

// file reads one file: a JSON array of records, or one record per line.
func (r *reader) file(path string, record func(data []byte) error) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("cai: %w", err)
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var items []json.RawMessage
		if err := json.Unmarshal(trimmed, &items); err != nil {
			return fmt.Errorf("cai: %s: not a JSON array of assets: %w", path, err)
		}
		for i, item := range items {
			if err := record(item); err != nil {
				return fmt.Errorf("cai: %s: item %d: %w", path, i+1, err)
			}
		}
		return nil
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		if err := record(text); err != nil {
			return fmt.Errorf("cai: %s:%d: %w", path, line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("cai: %s: %w", path, err)
	}
	return nil
}

var decode = protojson.UnmarshalOptions{DiscardUnknown: true}

// resourceAsset reads one exported resource.
func (r *reader) resourceAsset(data []byte) error {
	var a assetpb.Asset
	if err := decode.Unmarshal(data, &a); err != nil {
		return fmt.Errorf("not a Cloud Asset Inventory asset (gcloud asset export --content-type=resource): %w", err)
	}
	if a.GetName() == "" || a.GetAssetType() == "" {
		return errors.New(`an exported asset has "name" and "asset_type"`)
	}
	r.learnNumber(a.GetName(), a.GetAncestors())
	for _, anc := range a.GetAncestors() {
		if p, ok := strings.CutPrefix(anc, "projects/"); ok {
			r.exported[p] = true
		}
	}
	if p := inventory.ProjectOf(relative(a.GetName())); p != "" {
		r.exported[p] = true
	}
	return r.resource(a.GetName(), a.GetAssetType(), a.GetResource().GetData(), a.GetAncestors(), false)
}

// searchResult reads one search result.
func (r *reader) searchResult(data []byte) error {
	var s assetpb.ResourceSearchResult
	if err := decode.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("not a search result (gcloud asset search-all-resources --format=json): %w", err)
	}
	if s.GetName() == "" || s.GetAssetType() == "" {
		return errors.New(`a search result has "name" and "assetType"`)
	}
	ancestors := []string{}
	if s.GetProject() != "" {
		ancestors = append(ancestors, s.GetProject())
	}
	r.learnNumber(s.GetName(), ancestors)
	var body *structpb.Struct
	for _, v := range s.GetVersionedResources() {
		if v.GetResource() != nil {
			body = v.GetResource()
			break
		}
	}
	unshown := body == nil
	if unshown {
		// Without its resource only the name and labels are known.
		body = &structpb.Struct{Fields: map[string]*structpb.Value{}}
		if len(s.GetLabels()) > 0 {
			labels := map[string]any{}
			for k, v := range s.GetLabels() {
				labels[k] = v
			}
			lv, err := structpb.NewValue(labels)
			if err != nil {
				return err
			}
			body.Fields["labels"] = lv
		}
	}
	return r.resource(s.GetName(), s.GetAssetType(), body, ancestors, unshown)
}

// fullName matches a Cloud Asset Inventory resource name: //SERVICE/RELATIVE-NAME.
var fullName = regexp.MustCompile(`^//([^/]+)/(.+)$`)

// relative is the relative resource name of a CAI name (projects/p/topics/t).
func relative(name string) string {
	if m := fullName.FindStringSubmatch(name); m != nil {
		return m[2]
	}
	return name
}

// learnNumber records the project number of an asset named with its project ID.
func (r *reader) learnNumber(name string, ancestors []string) {
	if id := inventory.ProjectOf(relative(name)); id != "" && !isNumber(id) {
		if num := ancestorNumber(ancestors); num != "" {
			r.numbers[num] = id
		}
	}
}

// ancestorNumber is the number of the project among an asset's ancestors, or "".
func ancestorNumber(ancestors []string) string {
	for _, a := range ancestors {
		if num, ok := strings.CutPrefix(a, "projects/"); ok && isNumber(num) {
			return num
		}
	}
	return ""
}

// isNumber reports whether a project is named by its number rather than its ID.
var isNumber = regexp.MustCompile(`^[0-9]+$`).MatchString

// resource adds one resource of an asset type the audit reads; others are skipped.
func (r *reader) resource(name, assetType string, body *structpb.Struct, ancestors []string, unshown bool) error {
	rel := relative(name)
	switch assetType {
	case assetProject:
		id, _ := body.GetFields()["projectId"].GetKind().(*structpb.Value_StringValue)
		num, _ := body.GetFields()["projectNumber"].GetKind().(*structpb.Value_StringValue)
		if id != nil && num != nil {
			r.numbers[num.StringValue] = id.StringValue
		}
		return nil
	case assetTopic, assetSubscription, assetService, assetAlertPolicy:
	default:
		return nil
	}
	if body == nil {
		return fmt.Errorf("%s %s has no resource data: export with --content-type=resource", assetType, name)
	}
	data, err := protojson.Marshal(body)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	add := func() error {
		project := r.projectID(inventory.ProjectOf(rel))
		if project == "" {
			return fmt.Errorf("%s: cannot tell its project", name)
		}
		p := r.inv.Project(project)
		if p.Number == "" {
			p.Number = ancestorNumber(ancestors)
		}
		full := withProject(rel, project)
		switch assetType {
		case assetTopic:
			t := &pubsubpb.Topic{}
			if err := decode.Unmarshal(data, t); err != nil {
				return fmt.Errorf("%s: the resource data is not a Pub/Sub Topic: %w", name, err)
			}
			t.Name = full
			p.Topics = replaceByName(p.Topics, t)
			p.SetUnshown(full, unshown)
		case assetSubscription:
			s := &pubsubpb.Subscription{}
			if err := decode.Unmarshal(data, s); err != nil {
				return fmt.Errorf("%s: the resource data is not a Pub/Sub Subscription: %w", name, err)
			}
			s.Name = full
			if s.Topic != "" {
				s.Topic = withProject(s.Topic, r.projectID(inventory.ProjectOf(s.Topic)))
			}
			if dlp := s.GetDeadLetterPolicy(); dlp != nil && dlp.DeadLetterTopic != "" {
				dlp.DeadLetterTopic = withProject(dlp.DeadLetterTopic, r.projectID(inventory.ProjectOf(dlp.DeadLetterTopic)))
			}
			p.Subscriptions = replaceByName(p.Subscriptions, s)
			p.SetUnshown(full, unshown)
		case assetService:
			svc, err := service(data, full)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			r.services[full] = svc
		case assetAlertPolicy:
			ap := &monitoringpb.AlertPolicy{}
			if err := decode.Unmarshal(data, ap); err != nil {
				return fmt.Errorf("%s: the resource data is not an AlertPolicy: %w", name, err)
			}
			ap.Name = full
			r.alertPolicies = true
			p.AlertPolicies = append(p.AlertPolicies, ap)
		}
		return nil
	}
	if isNumber(inventory.ProjectOf(rel)) {
		// Named by project number: resolved once every file is read.
		r.pending = append(r.pending, add)
		return nil
	}
	return add()
}

// projectID is the ID of a project named by ID or number (unchanged when unknown).
func (r *reader) projectID(p string) string {
	if id, ok := r.numbers[p]; ok {
		return id
	}
	return p
}

// withProject rewrites the project part of a relative name to project.
func withProject(rel, project string) string {
	old := inventory.ProjectOf(rel)
	if old == "" || project == "" || old == project {
		return rel
	}
	return "projects/" + project + strings.TrimPrefix(rel, "projects/"+old)
}

// replaceByName replaces the element of list named like x, or appends x.
func replaceByName[T interface{ GetName() string }](list []T, x T) []T {
	for i, e := range list {
		if e.GetName() == x.GetName() {
			list[i] = x
			return list
		}
	}
	return append(list, x)
}

// policyAsset reads one exported IAM policy.
func (r *reader) policyAsset(data []byte) error {
	var a assetpb.Asset
	if err := decode.Unmarshal(data, &a); err != nil {
		return fmt.Errorf("not a Cloud Asset Inventory asset (gcloud asset export --content-type=iam-policy): %w", err)
	}
	if a.GetName() == "" {
		return errors.New(`an exported policy has "name"`)
	}
	if a.GetIamPolicy() == nil {
		return fmt.Errorf("%s has no iam_policy: export with --content-type=iam-policy", a.GetName())
	}
	r.learnNumber(a.GetName(), a.GetAncestors())
	rel := relative(a.GetName())
	r.policies = append(r.policies, policyLine{project: inventory.ProjectOf(rel), name: rel, policy: a.GetIamPolicy()})
	return nil
}

// finish resolves what was named by project number, attaches the IAM policies and the
// Cloud Run services push subscriptions target, and records what the files do not hold.
func (r *reader) finish(iamGiven bool) error {
	for _, add := range r.pending {
		if err := add(); err != nil {
			return fmt.Errorf("cai: %w", err)
		}
	}
	r.attachServices()
	projects := map[string]*inventory.Project{}
	for _, p := range r.inv.Projects {
		projects[p.ID] = p
	}
	covered := map[string]bool{}
	for num := range r.exported {
		covered[r.projectID(num)] = iamGiven
	}
	for _, pl := range r.policies {
		project := r.projectID(pl.project)
		covered[project] = true
		if p, ok := projects[project]; ok {
			p.SetPolicy(withProject(pl.name, project), pl.policy)
		}
	}
	for _, p := range r.inv.Projects {
		exported := r.exported[p.ID] || (p.Number != "" && r.exported[p.Number])
		r.coverage(p, covered[p.ID], r.alertPolicies && exported)
	}
	return nil
}

// attachServices adds to the inventory the Cloud Run services push subscriptions target,
// each in its own project, and records a gap for a *.run.app host no service answers on.
func (r *reader) attachServices() {
	var all []*runpb.Service
	for _, svc := range r.services {
		all = append(all, svc)
	}
	targeted := map[string]bool{}
	for _, p := range slices.Clone(r.inv.Projects) {
		for _, s := range p.Subscriptions {
			host := inventory.PushHost(s)
			if !inventory.IsRunHost(host) {
				continue
			}
			svc := inventory.PushTarget(s, all)
			if svc == nil {
				if !p.HasGap(inventory.GapService, host) {
					p.AddGap(inventory.GapService, host, "no exported Cloud Run service answers on this host: export "+assetService+" of its project too")
				}
				continue
			}
			if !targeted[svc.GetName()] {
				targeted[svc.GetName()] = true
				owner := r.inv.Project(inventory.ProjectOf(svc.GetName()))
				owner.Services = append(owner.Services, svc)
			}
		}
	}
}

// coverage records what the files hold for p and what they do not. When the IAM export
// covers p (it holds a policy of p, or the resource export covers p too), the policies it
// leaves out are empty: it lists only resources that have one. Alert policies are read
// when the resource export covers p and holds alert policies at all. Firestore TTL
// policies and backlogs are never held.
func (r *reader) coverage(p *inventory.Project, iamCovered, alertsRead bool) {
	var names []string
	for _, t := range p.Topics {
		names = append(names, t.GetName())
	}
	for _, s := range p.Subscriptions {
		names = append(names, s.GetName())
	}
	for _, svc := range p.Services {
		names = append(names, svc.GetName())
	}
	if p.Number != "" {
		if pol, ok := p.Policies[inventory.ProjectName(p.Number)]; ok {
			p.SetPolicy(inventory.ProjectName(p.ID), pol)
		}
	}
	names = append(names, inventory.ProjectName(p.ID))
	for _, name := range names {
		if _, ok := p.Policies[name]; ok {
			continue
		}
		if iamCovered {
			p.SetPolicy(name, &iampb.Policy{})
		} else {
			p.AddGap(inventory.GapPolicy, name, "no IAM policy export covers this project (--cai-iam)")
		}
	}
	p.AlertPoliciesRead = alertsRead
	if !alertsRead {
		p.AddGap(inventory.GapAlertPolicies, inventory.ProjectName(p.ID), "the resource export does not hold this project's "+assetAlertPolicy+" assets: export that asset type for it too")
	}
	if len(inventory.FirestoreDatabases(p.Services)) > 0 {
		p.AddGap(inventory.GapTTLFields, inventory.ProjectName(p.ID), "Cloud Asset Inventory does not hold Firestore TTL policies")
	} else {
		p.TTLFieldsRead = true
	}
	p.AddGap(inventory.GapBacklog, inventory.ProjectName(p.ID), "Cloud Asset Inventory does not hold message backlogs")
	if p.Number == "" {
		p.AddGap(inventory.GapProjectNumber, inventory.ProjectName(p.ID), "no asset of the project names its number")
	}
}
