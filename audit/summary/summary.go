// Package summary writes the audit for the people who own the estate rather than for a
// CI system: per project, how many subscriptions there are, how many lack a dead-letter
// policy, who manages them, the oldest unacknowledged message when Cloud Monitoring
// answered, the findings with where to fix each, and what the audit could not read. The
// same content is written as Markdown (for an issue or a pull request) and as a
// self-contained HTML page.
package summary

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"

	"github.com/eventpipe/eventpipe/audit/inventory"
	"github.com/eventpipe/eventpipe/audit/ownership"
	"github.com/eventpipe/eventpipe/policies/evaluate"
)

// Finding is one finding as the summary shows it.
type Finding struct {
	Project  string
	RuleID   string
	Title    string
	Severity string
	// Level is deny or warn.
	Level    string
	Resource string
	Message  string
	Owner    string
	Fix      string
	Waived   bool
}

// Input is what a summary is made from.
type Input struct {
	// Source names what was audited ("live", CAI file names).
	Source    string
	Generated time.Time
	Inventory *inventory.Inventory
	// Owners are the subscriptions' owners by full subscription name.
	Owners   map[string]ownership.Owner
	Findings []Finding
	// Failed says whether the audit fails (the machine formats' verdict).
	Failed bool
}

// Summary is the content both formats show.
type Summary struct {
	Source    string
	Generated string
	Failed    bool
	Projects  []Project
	Totals    Project
}

// Project is one project's line and sections.
type Project struct {
	ID            string
	Subscriptions int
	// Push, Pull, BigQuery and CloudStorage split Subscriptions by delivery.
	Push, Pull, BigQuery, CloudStorage int
	// WithoutDLQ counts subscriptions with no dead-letter policy, DLQ readers excepted.
	WithoutDLQ int
	// DLQReaders counts the subscriptions that read a dead-letter topic.
	DLQReaders int
	// Unknown counts the subscriptions whose settings the source does not show.
	Unknown int
	// Owners counts subscriptions by who manages them.
	Owners []Count
	// Backlog is the oldest unacknowledged message age and its subscription, or why it is
	// not known.
	Backlog                  string
	Denies, Warnings, Waived int
	Findings                 []Finding
	// Gaps are what could not be read, grouped by kind and reason.
	Gaps []Gap
}

// Gap is one kind of thing not read for one reason, with how many resources and a few
// of their names.
type Gap struct {
	Kind     string
	Reason   string
	Count    int
	Examples []string
}

// maxExamples is how many resource names a gap line shows.
const maxExamples = 3

func gaps(p *inventory.Project) []Gap {
	var out []Gap
	for _, g := range inventory.GroupGaps(p.Gaps) {
		// A project-wide gap (alert policies, backlog) names no resource of its own.
		resources := slices.DeleteFunc(g.Resources, func(r string) bool { return r == inventory.ProjectName(p.ID) })
		out = append(out, Gap{Kind: string(g.Kind), Reason: g.Reason, Count: len(resources), Examples: resources[:min(len(resources), maxExamples)]})
	}
	return out
}

// Count is a labelled number.
type Count struct {
	Label string
	N     int
}

// Build computes the summary.
func Build(in Input) *Summary {
	s := &Summary{Source: in.Source, Generated: in.Generated.UTC().Format(time.RFC3339), Failed: in.Failed}
	byProject := map[string][]Finding{}
	for _, f := range in.Findings {
		byProject[f.Project] = append(byProject[f.Project], f)
	}
	for _, p := range in.Inventory.Projects {
		s.Projects = append(s.Projects, projectRow(p, in.Owners, byProject[p.ID]))
		delete(byProject, p.ID)
	}
	// Findings of no audited project (an expired waiver) are listed on their own, in order.
	for _, id := range slices.Sorted(maps.Keys(byProject)) {
		row := Project{ID: cmp.Or(id, "configuration"), Backlog: "—", Findings: byProject[id]}
		tally(&row)
		s.Projects = append(s.Projects, row)
	}
	owners := map[string]int{}
	for _, row := range s.Projects {
		s.Totals.Subscriptions += row.Subscriptions
		s.Totals.WithoutDLQ += row.WithoutDLQ
		s.Totals.DLQReaders += row.DLQReaders
		s.Totals.Unknown += row.Unknown
		s.Totals.Denies += row.Denies
		s.Totals.Warnings += row.Warnings
		s.Totals.Waived += row.Waived
		for _, c := range row.Owners {
			owners[c.Label] += c.N
		}
	}
	s.Totals.ID = "all"
	s.Totals.Owners = counts(owners)
	return s
}

func projectRow(p *inventory.Project, owners map[string]ownership.Owner, findings []Finding) Project {
	row := Project{ID: p.ID, Subscriptions: len(p.Subscriptions), Findings: findings, Gaps: gaps(p)}
	deadTopics := map[string]bool{}
	for _, s := range p.Subscriptions {
		if t := s.GetDeadLetterPolicy().GetDeadLetterTopic(); t != "" {
			deadTopics[t] = true
		}
	}
	byOwner := map[string]int{}
	for _, s := range p.Subscriptions {
		switch {
		case s.GetPushConfig().GetPushEndpoint() != "":
			row.Push++
		case s.GetBigqueryConfig().GetTable() != "":
			row.BigQuery++
		case s.GetCloudStorageConfig().GetBucket() != "":
			row.CloudStorage++
		default:
			row.Pull++
		}
		switch {
		case p.Unshown[s.GetName()]:
			row.Unknown++
		case deadTopics[s.GetTopic()] || s.GetLabels()["eventpipe_role"] == "dlq":
			row.DLQReaders++
		case !hasDLQ(s):
			row.WithoutDLQ++
		}
		if o, ok := owners[s.GetName()]; ok {
			byOwner[ownerLabel(o.Kind)]++
		}
	}
	row.Owners = counts(byOwner)
	row.Backlog = backlog(p)
	tally(&row)
	return row
}

func hasDLQ(s *pubsubpb.Subscription) bool {
	return s.GetDeadLetterPolicy().GetDeadLetterTopic() != ""
}

func tally(row *Project) {
	slices.SortStableFunc(row.Findings, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(severityRank(a.Severity), severityRank(b.Severity)),
			strings.Compare(a.RuleID, b.RuleID), strings.Compare(a.Resource, b.Resource))
	})
	for _, f := range row.Findings {
		switch {
		case f.Waived:
			row.Waived++
		case f.Level == "deny":
			row.Denies++
		default:
			row.Warnings++
		}
	}
}

// severityRank orders the rules' severities, most severe first; any other last.
func severityRank(s string) int {
	if i := slices.Index(evaluate.Severities, s); i >= 0 {
		return i
	}
	return len(evaluate.Severities)
}

// backlog is the oldest unacknowledged message age of the project, with its subscription.
func backlog(p *inventory.Project) string {
	for _, g := range p.Gaps {
		if g.Kind == inventory.GapBacklog {
			return firstLine(g.Reason)
		}
	}
	if p.Backlog == nil {
		return "not read"
	}
	var worst string
	var age time.Duration
	for sub, a := range p.Backlog {
		if a > age || (a == age && sub < worst) {
			worst, age = sub, a
		}
	}
	if worst == "" {
		return "no backlog"
	}
	return fmt.Sprintf("%s (%s)", age.Round(time.Second), inventory.ShortName(worst))
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}

func ownerLabel(k ownership.Kind) string {
	return ownership.Owner{Kind: k}.String()
}

func counts(m map[string]int) []Count {
	out := make([]Count, 0, len(m))
	for k, n := range m {
		out = append(out, Count{Label: k, N: n})
	}
	slices.SortFunc(out, func(a, b Count) int { return cmp.Or(cmp.Compare(b.N, a.N), strings.Compare(a.Label, b.Label)) })
	return out
}
