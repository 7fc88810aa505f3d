package tfprovider

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/hashicorp/terraform-plugin-go/tfprotov5"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// server answers Terraform's plugin protocol (version 5, as the real provider's SDK
// does) for one flavour of the provider.
type server struct {
	*catalogue
	config providerConfig
}

var _ tfprotov5.ProviderServer = (*server)(nil)

func newServer(beta bool) *server {
	return &server{catalogue: newCatalogue(beta), config: providerConfig{attribution: true}}
}

// errUnsupported answers the protocol calls fixtures never make.
var errUnsupported = errors.New("not supported by the stand-in google provider")

func diagnostics(err error) []*tfprotov5.Diagnostic {
	if err == nil {
		return nil
	}
	return []*tfprotov5.Diagnostic{{Severity: tfprotov5.DiagnosticSeverityError, Summary: err.Error()}}
}

func (s *server) capabilities() *tfprotov5.ServerCapabilities {
	return &tfprotov5.ServerCapabilities{GetProviderSchemaOptional: true, PlanDestroy: true}
}

func (s *server) GetMetadata(context.Context, *tfprotov5.GetMetadataRequest) (*tfprotov5.GetMetadataResponse, error) {
	resp := &tfprotov5.GetMetadataResponse{ServerCapabilities: s.capabilities()}
	for _, name := range slices.Sorted(maps.Keys(s.resources)) {
		resp.Resources = append(resp.Resources, tfprotov5.ResourceMetadata{TypeName: name})
	}
	for _, name := range slices.Sorted(maps.Keys(s.dataSources)) {
		resp.DataSources = append(resp.DataSources, tfprotov5.DataSourceMetadata{TypeName: name})
	}
	return resp, nil
}

func (s *server) GetProviderSchema(context.Context, *tfprotov5.GetProviderSchemaRequest) (*tfprotov5.GetProviderSchemaResponse, error) {
	resp := &tfprotov5.GetProviderSchemaResponse{
		ServerCapabilities:       s.capabilities(),
		Provider:                 &tfprotov5.Schema{Block: protoBlock(providerFields())},
		ProviderMeta:             &tfprotov5.Schema{Block: protoBlock(providerMetaFields())},
		ResourceSchemas:          map[string]*tfprotov5.Schema{},
		DataSourceSchemas:        map[string]*tfprotov5.Schema{},
		Functions:                map[string]*tfprotov5.Function{},
		EphemeralResourceSchemas: map[string]*tfprotov5.Schema{},
	}
	for name, r := range s.resources {
		resp.ResourceSchemas[name] = r.schema()
	}
	for name, d := range s.dataSources {
		resp.DataSourceSchemas[name] = d.schema()
	}
	return resp, nil
}

func (s *server) GetResourceIdentitySchemas(context.Context, *tfprotov5.GetResourceIdentitySchemasRequest) (*tfprotov5.GetResourceIdentitySchemasResponse, error) {
	return &tfprotov5.GetResourceIdentitySchemasResponse{}, nil
}

func (s *server) PrepareProviderConfig(_ context.Context, req *tfprotov5.PrepareProviderConfigRequest) (*tfprotov5.PrepareProviderConfigResponse, error) {
	return &tfprotov5.PrepareProviderConfigResponse{PreparedConfig: req.Config}, nil
}

// ConfigureProvider keeps what planning needs from the provider block: project, region,
// default labels, the attribution label settings and the default deletion policy.
func (s *server) ConfigureProvider(_ context.Context, req *tfprotov5.ConfigureProviderRequest) (*tfprotov5.ConfigureProviderResponse, error) {
	v, err := decode(req.Config, objectType(providerFields()))
	if err != nil {
		return &tfprotov5.ConfigureProviderResponse{Diagnostics: diagnostics(fmt.Errorf("provider configuration: %w", err))}, nil
	}
	cfg, _ := v.(object)
	s.config = providerConfig{
		project:        text(cfg, "project"),
		region:         text(cfg, "region"),
		attribution:    cfg["add_terraform_attribution_label"] != false,
		proactive:      text(cfg, "terraform_attribution_label_addition_strategy") == "PROACTIVE",
		deletionPolicy: text(cfg, "deletion_policy"),
	}
	if labels, ok := cfg["default_labels"].(object); ok {
		s.config.defaultLabels = map[string]string{}
		for k, l := range labels {
			s.config.defaultLabels[k], _ = l.(string)
		}
	}
	return &tfprotov5.ConfigureProviderResponse{}, nil
}

func (s *server) StopProvider(context.Context, *tfprotov5.StopProviderRequest) (*tfprotov5.StopProviderResponse, error) {
	return &tfprotov5.StopProviderResponse{}, nil
}

func (s *server) resource(name string) (*resourceType, error) {
	r, ok := s.resources[name]
	if !ok {
		return nil, fmt.Errorf("resource type %s: %w", name, errUnsupported)
	}
	return r, nil
}

func (s *server) ValidateResourceTypeConfig(_ context.Context, req *tfprotov5.ValidateResourceTypeConfigRequest) (*tfprotov5.ValidateResourceTypeConfigResponse, error) {
	_, err := s.resource(req.TypeName)
	return &tfprotov5.ValidateResourceTypeConfigResponse{Diagnostics: diagnostics(err)}, nil
}

// UpgradeResourceState reads state as written: the stand-in's schemas have one version.
func (s *server) UpgradeResourceState(_ context.Context, req *tfprotov5.UpgradeResourceStateRequest) (*tfprotov5.UpgradeResourceStateResponse, error) {
	r, err := s.resource(req.TypeName)
	if err != nil {
		return &tfprotov5.UpgradeResourceStateResponse{Diagnostics: diagnostics(err)}, nil
	}
	if req.RawState == nil || req.RawState.JSON == nil {
		return &tfprotov5.UpgradeResourceStateResponse{Diagnostics: diagnostics(fmt.Errorf("%s: state without JSON: %w", req.TypeName, errUnsupported))}, nil
	}
	t := r.objectType()
	v, err := req.RawState.UnmarshalWithOpts(t, tfprotov5.UnmarshalOpts{})
	if err != nil {
		return &tfprotov5.UpgradeResourceStateResponse{Diagnostics: diagnostics(fmt.Errorf("%s state: %w", req.TypeName, err))}, nil
	}
	dv, err := tfprotov5.NewDynamicValue(t, v)
	if err != nil {
		return &tfprotov5.UpgradeResourceStateResponse{Diagnostics: diagnostics(err)}, nil
	}
	return &tfprotov5.UpgradeResourceStateResponse{UpgradedState: &dv}, nil
}

// ReadResource refreshes to the state as last applied: nothing changes outside Terraform.
func (s *server) ReadResource(_ context.Context, req *tfprotov5.ReadResourceRequest) (*tfprotov5.ReadResourceResponse, error) {
	return &tfprotov5.ReadResourceResponse{NewState: req.CurrentState, Private: req.Private}, nil
}

func (s *server) PlanResourceChange(_ context.Context, req *tfprotov5.PlanResourceChangeRequest) (*tfprotov5.PlanResourceChangeResponse, error) {
	planned, replace, err := s.planChange(req)
	if err != nil {
		return &tfprotov5.PlanResourceChangeResponse{Diagnostics: diagnostics(fmt.Errorf("%s: %w", req.TypeName, err))}, nil
	}
	return &tfprotov5.PlanResourceChangeResponse{PlannedState: planned, RequiresReplace: replace, PlannedPrivate: req.PriorPrivate, UnsafeToUseLegacyTypeSystem: true}, nil
}

func (s *server) planChange(req *tfprotov5.PlanResourceChangeRequest) (*tfprotov5.DynamicValue, []*tftypes.AttributePath, error) {
	r, err := s.resource(req.TypeName)
	if err != nil {
		return nil, nil, err
	}
	t := r.objectType()
	var vals [3]object
	for i, dv := range []*tfprotov5.DynamicValue{req.ProposedNewState, req.Config, req.PriorState} {
		v, err := decode(dv, t)
		if err != nil {
			return nil, nil, err
		}
		vals[i], _ = v.(object)
	}
	proposed, config, prior := vals[0], vals[1], vals[2]
	if proposed == nil { // destroy
		dv, err := encode(t, nil)
		return dv, nil, err
	}
	if r.project && config["project"] == nil && s.config.project == "" {
		return nil, nil, errors.New("project: required field is not set (set it here or in the provider block)")
	}
	planned, replace := r.plan(proposed, config, prior, &s.config)
	dv, err := encode(t, planned)
	return dv, replace, err
}

func (s *server) ApplyResourceChange(_ context.Context, req *tfprotov5.ApplyResourceChangeRequest) (*tfprotov5.ApplyResourceChangeResponse, error) {
	state, err := s.applyChange(req)
	if err != nil {
		return &tfprotov5.ApplyResourceChangeResponse{Diagnostics: diagnostics(fmt.Errorf("%s: %w", req.TypeName, err))}, nil
	}
	return &tfprotov5.ApplyResourceChangeResponse{NewState: state, Private: req.PlannedPrivate, UnsafeToUseLegacyTypeSystem: true}, nil
}

func (s *server) applyChange(req *tfprotov5.ApplyResourceChangeRequest) (*tfprotov5.DynamicValue, error) {
	r, err := s.resource(req.TypeName)
	if err != nil {
		return nil, err
	}
	t := r.objectType()
	v, err := decode(req.PlannedState, t)
	if err != nil {
		return nil, err
	}
	planned, _ := v.(object)
	return encode(t, r.applied(planned, &s.config))
}

func (s *server) ImportResourceState(_ context.Context, req *tfprotov5.ImportResourceStateRequest) (*tfprotov5.ImportResourceStateResponse, error) {
	return &tfprotov5.ImportResourceStateResponse{Diagnostics: diagnostics(fmt.Errorf("importing %s: %w", req.TypeName, errUnsupported))}, nil
}

func (s *server) MoveResourceState(_ context.Context, req *tfprotov5.MoveResourceStateRequest) (*tfprotov5.MoveResourceStateResponse, error) {
	return &tfprotov5.MoveResourceStateResponse{Diagnostics: diagnostics(fmt.Errorf("moving to %s: %w", req.TargetTypeName, errUnsupported))}, nil
}

func (s *server) UpgradeResourceIdentity(_ context.Context, req *tfprotov5.UpgradeResourceIdentityRequest) (*tfprotov5.UpgradeResourceIdentityResponse, error) {
	return &tfprotov5.UpgradeResourceIdentityResponse{Diagnostics: diagnostics(fmt.Errorf("identity of %s: %w", req.TypeName, errUnsupported))}, nil
}

func (s *server) ValidateDataSourceConfig(_ context.Context, req *tfprotov5.ValidateDataSourceConfigRequest) (*tfprotov5.ValidateDataSourceConfigResponse, error) {
	var err error
	if _, ok := s.dataSources[req.TypeName]; !ok {
		err = fmt.Errorf("data source %s: %w", req.TypeName, errUnsupported)
	}
	return &tfprotov5.ValidateDataSourceConfigResponse{Diagnostics: diagnostics(err)}, nil
}

// ReadDataSource reads a data source whose configuration is known (Terraform defers the
// read to apply otherwise).
func (s *server) ReadDataSource(_ context.Context, req *tfprotov5.ReadDataSourceRequest) (*tfprotov5.ReadDataSourceResponse, error) {
	state, err := s.readData(req)
	if err != nil {
		return &tfprotov5.ReadDataSourceResponse{Diagnostics: diagnostics(fmt.Errorf("data source %s: %w", req.TypeName, err))}, nil
	}
	return &tfprotov5.ReadDataSourceResponse{State: state}, nil
}

func (s *server) readData(req *tfprotov5.ReadDataSourceRequest) (*tfprotov5.DynamicValue, error) {
	d, ok := s.dataSources[req.TypeName]
	if !ok {
		return nil, errUnsupported
	}
	t := d.objectType()
	v, err := decode(req.Config, t)
	if err != nil {
		return nil, err
	}
	state, _ := v.(object)
	if err := d.read(state, &s.config); err != nil {
		return nil, err
	}
	return encode(t, state)
}

func (s *server) GetFunctions(context.Context, *tfprotov5.GetFunctionsRequest) (*tfprotov5.GetFunctionsResponse, error) {
	return &tfprotov5.GetFunctionsResponse{Functions: map[string]*tfprotov5.Function{}}, nil
}

func (s *server) CallFunction(_ context.Context, req *tfprotov5.CallFunctionRequest) (*tfprotov5.CallFunctionResponse, error) {
	return &tfprotov5.CallFunctionResponse{Error: &tfprotov5.FunctionError{Text: fmt.Sprintf("function %s: %v", req.Name, errUnsupported)}}, nil
}

func (s *server) ValidateEphemeralResourceConfig(_ context.Context, req *tfprotov5.ValidateEphemeralResourceConfigRequest) (*tfprotov5.ValidateEphemeralResourceConfigResponse, error) {
	return &tfprotov5.ValidateEphemeralResourceConfigResponse{Diagnostics: diagnostics(fmt.Errorf("ephemeral resource %s: %w", req.TypeName, errUnsupported))}, nil
}

func (s *server) OpenEphemeralResource(_ context.Context, req *tfprotov5.OpenEphemeralResourceRequest) (*tfprotov5.OpenEphemeralResourceResponse, error) {
	return &tfprotov5.OpenEphemeralResourceResponse{Diagnostics: diagnostics(fmt.Errorf("ephemeral resource %s: %w", req.TypeName, errUnsupported))}, nil
}

func (s *server) RenewEphemeralResource(_ context.Context, req *tfprotov5.RenewEphemeralResourceRequest) (*tfprotov5.RenewEphemeralResourceResponse, error) {
	return &tfprotov5.RenewEphemeralResourceResponse{Diagnostics: diagnostics(fmt.Errorf("ephemeral resource %s: %w", req.TypeName, errUnsupported))}, nil
}

func (s *server) CloseEphemeralResource(_ context.Context, req *tfprotov5.CloseEphemeralResourceRequest) (*tfprotov5.CloseEphemeralResourceResponse, error) {
	return &tfprotov5.CloseEphemeralResourceResponse{Diagnostics: diagnostics(fmt.Errorf("ephemeral resource %s: %w", req.TypeName, errUnsupported))}, nil
}
