// Package tfprovider is a stand-in for Terraform's hashicorp/google (and google-beta)
// provider, for building Terraform plan fixtures where the registry cannot be reached.
//
// It serves the real provider's schemas for the few resource types eventpipe's policies
// judge — attribute for attribute as terraform-provider-google v7.45.0 declares them —
// and plans as the real provider plans (defaults, computed values unknown until apply,
// replacement on ForceNew changes, labels and project defaults), so `terraform plan` and
// `terraform show -json` print what they would print with the real provider. Applying
// invents the values the API would return, deterministically, so a fixture can start
// from applied state; nothing calls Google Cloud.
package tfprovider

import (
	"github.com/hashicorp/terraform-plugin-go/tfprotov5"
	"github.com/hashicorp/terraform-plugin-go/tfprotov5/tf5server"
)

// Version is the terraform-provider-google release whose schemas the stand-in serves.
const Version = "7.45.0"

// providerFields are the provider block's fields the stand-in accepts: those of the real
// provider (google/provider/provider.go) except the custom endpoints of services it does
// not stand in for.
func providerFields() []field {
	return []field{
		str("credentials", optional),
		str("access_token", optional),
		list("external_credentials", optional, 1,
			str("audience", required),
			str("service_account_email", required),
			str("identity_token", required),
		),
		str("impersonate_service_account", optional),
		strList("impersonate_service_account_delegates", optional),
		str("project", optional),
		str("billing_project", optional),
		str("region", optional),
		str("zone", optional),
		strList("scopes", optional),
		str("universe_domain", optional),
		list("batching", optional, 1,
			str("send_after", optional),
			boolean("enable_batching", optional),
		),
		boolean("user_project_override", optional),
		str("request_timeout", optional),
		str("poll_interval", optional),
		str("deletion_policy", optional),
		str("request_reason", optional),
		strMap("default_labels", optional),
		boolean("add_terraform_attribution_label", optional),
		str("terraform_attribution_label_addition_strategy", optional),
		boolean("prefer_global_endpoints", optional),
		boolean("prefer_regional_endpoints", optional),
		str("cloud_run_v2_custom_endpoint", optional),
		str("firestore_custom_endpoint", optional),
		str("iam_custom_endpoint", optional),
		str("monitoring_custom_endpoint", optional),
		str("pubsub_custom_endpoint", optional),
		str("resource_manager_custom_endpoint", optional),
	}
}

// providerMetaFields are the fields of a module's provider_meta block.
func providerMetaFields() []field {
	return []field{str("module_name", optional)}
}

// catalogue is what one flavour of the provider serves.
type catalogue struct {
	resources   map[string]*resourceType
	dataSources map[string]*resourceType
}

// newCatalogue returns the resource types and data sources of the google provider, or of
// google-beta (which adds google_project_service_identity) when beta is set.
func newCatalogue(beta bool) *catalogue {
	c := &catalogue{resources: map[string]*resourceType{}, dataSources: map[string]*resourceType{}}
	rs := []*resourceType{pubsubTopic(), pubsubSubscription(), cloudRunService(), firestoreField(), monitoringAlertPolicy()}
	rs = append(rs, pubsubIAM()...)
	rs = append(rs, cloudRunIAM()...)
	rs = append(rs, projectIAM()...)
	if beta {
		rs = append(rs, projectServiceIdentity())
	}
	for _, r := range rs {
		c.resources[r.name] = r
	}
	for _, d := range []*resourceType{projectData(), iamPolicyData(), pubsubTopicData()} {
		c.dataSources[d.name] = d
	}
	return c
}

// Serve runs the provider as a Terraform plugin; beta serves the google-beta flavour.
// It returns when Terraform is done with the plugin.
func Serve(beta bool) error {
	name := "registry.terraform.io/hashicorp/google"
	if beta {
		name += "-beta"
	}
	return tf5server.Serve(name, func() tfprotov5.ProviderServer { return newServer(beta) })
}
