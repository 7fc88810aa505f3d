package analyzer

import (
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// exportDoc is a `pulumi stack export` document (version 3): the form the analyzer hands
// the resources of an Analyze or AnalyzeStack request to the rules in.
type exportDoc struct {
	Version    int              `json:"version"`
	Deployment exportDeployment `json:"deployment"`
}

type exportDeployment struct {
	Resources []exportResource `json:"resources"`
}

// exportResource is one resource state. Its inputs are the properties Pulumi sent: the
// resource's inputs for Analyze, its outputs (a superset named alike) for AnalyzeStack,
// with unknown values as Pulumi's unknown sentinel and secrets in Pulumi's serialised
// form, which the plan reader turns into "[secret]".
type exportResource struct {
	URN                  string              `json:"urn"`
	Type                 string              `json:"type"`
	Inputs               json.RawMessage     `json:"inputs"`
	Parent               string              `json:"parent,omitempty"`
	Dependencies         []string            `json:"dependencies"`
	PropertyDependencies map[string][]string `json:"propertyDependencies"`
}

// stackExport builds the stack export of resources (an Analyze request's one resource
// comes as an AnalyzerResource without parent and dependencies). Every resource goes in as a custom
// one, components and the stack included: the rules choose their resources by type, and
// leaving out a cloud resource Pulumi happened to describe without a provider would pass
// it unjudged.
func stackExport(resources []*pulumirpc.AnalyzerResource) ([]byte, error) {
	doc := exportDoc{Version: 3, Deployment: exportDeployment{Resources: make([]exportResource, 0, len(resources))}}
	for i, r := range resources {
		if r.GetUrn() == "" || r.GetType() == "" {
			return nil, fmt.Errorf("resource %d (%q): Pulumi sent no urn or type", i, r.GetUrn())
		}
		props := json.RawMessage("{}")
		if r.GetProperties() != nil {
			b, err := protojson.Marshal(r.GetProperties())
			if err != nil {
				return nil, fmt.Errorf("resource %s: encoding its properties: %w", r.GetUrn(), err)
			}
			props = b
		}
		deps := map[string][]string{}
		for k, v := range r.GetPropertyDependencies() {
			if urns := v.GetUrns(); len(urns) > 0 {
				deps[k] = urns
			}
		}
		dependencies := r.GetDependencies()
		if dependencies == nil {
			dependencies = []string{}
		}
		doc.Deployment.Resources = append(doc.Deployment.Resources, exportResource{
			URN: r.GetUrn(), Type: r.GetType(), Inputs: props, Parent: r.GetParent(), Dependencies: dependencies, PropertyDependencies: deps,
		})
	}
	return json.Marshal(doc)
}
