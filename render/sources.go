package render

import (
	"strings"

	"github.com/eventpipe/eventpipe/components"
	"github.com/eventpipe/eventpipe/spec"
)

// sources maps every URN of plan to where the config that declared it is
// written: the subscription entry for a Subscription's resources, the
// consumer or topic block for those components, else the pipeline entry.
func sources(st *spec.Stack, file *spec.StackFile, plan *Plan) map[string]spec.Location {
	subPaths := map[string]string{} // subscription component name -> config path
	for _, p := range st.SortedPipelines() {
		for _, sub := range p.SortedSubscriptions() {
			subPaths[sub.Name] = pipelinePath(p.Name) + ".subscriptions." + sub.Key
		}
	}
	parents := map[string]string{}
	for _, s := range plan.Steps {
		parents[s.URN] = s.NewState.Parent
	}
	out := map[string]spec.Location{}
	for _, s := range plan.Steps {
		path := ""
		for urn := s.URN; urn != "" && path == ""; urn = parents[urn] {
			typ, name := urnTypeAndName(urn)
			switch typ {
			case components.TypeSubscription:
				path = subPaths[name]
			case components.TypeConsumer:
				path = pipelinePath(name) + ".consumer"
			case components.TypeTopic:
				path = pipelinePath(name) + ".topic"
			case components.TypePipeline, components.TypeFirestoreTTL:
				path = pipelinePath(name)
			}
		}
		if path == "" {
			continue
		}
		if loc, ok := file.Locate(path); ok {
			out[s.URN] = loc
		}
	}
	return out
}

func pipelinePath(name string) string { return spec.Namespace + ":" + spec.KeyPipelines + "." + name }

// urnTypeAndName returns the last type of a URN's type chain and its name.
func urnTypeAndName(urn string) (string, string) {
	parts := strings.Split(urn, "::")
	if len(parts) < 4 {
		return "", ""
	}
	chain := strings.Split(parts[2], "$")
	return chain[len(chain)-1], strings.Join(parts[3:], "::")
}
