package analyzer

import (
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

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

// resourceFields is what Analyze and AnalyzeStack requests say about one resource.
type resourceFields struct {
	urn, typ     string
	properties   *structpb.Struct
	parent       string
	dependencies []string
	propertyDeps map[string]*pulumirpc.AnalyzerPropertyDependencies
}

func fromAnalyzeRequest(r *pulumirpc.AnalyzeRequest) resourceFields {
	return resourceFields{urn: r.GetUrn(), typ: r.GetType(), properties: r.GetProperties()}
}

func fromStackResource(r *pulumirpc.AnalyzerResource) resourceFields {
	return resourceFields{
		urn: r.GetUrn(), typ: r.GetType(), properties: r.GetProperties(),
		parent: r.GetParent(), dependencies: r.GetDependencies(), propertyDeps: r.GetPropertyDependencies(),
	}
}

// stackExport builds the stack export of resources. Every resource goes in as a custom
// one, components and the stack included: the rules choose their resources by type, and
// leaving out a cloud resource Pulumi happened to describe without a provider would pass
// it unjudged.
func stackExport(resources []resourceFields) ([]byte, error) {
	doc := exportDoc{Version: 3, Deployment: exportDeployment{Resources: make([]exportResource, 0, len(resources))}}
	for i, r := range resources {
		if r.urn == "" || r.typ == "" {
			return nil, fmt.Errorf("resource %d (%q): Pulumi sent no urn or type", i, r.urn)
		}
		props := json.RawMessage("{}")
		if r.properties != nil {
			b, err := protojson.Marshal(r.properties)
			if err != nil {
				return nil, fmt.Errorf("resource %s: encoding its properties: %w", r.urn, err)
			}
			props = b
		}
		deps := map[string][]string{}
		for k, v := range r.propertyDeps {
			if urns := v.GetUrns(); len(urns) > 0 {
				deps[k] = urns
			}
		}
		dependencies := r.dependencies
		if dependencies == nil {
			dependencies = []string{}
		}
		doc.Deployment.Resources = append(doc.Deployment.Resources, exportResource{
			URN: r.urn, Type: r.typ, Inputs: props, Parent: r.parent, Dependencies: dependencies, PropertyDependencies: deps,
		})
	}
	return json.Marshal(doc)
}
