package model

import (
	"cloud.google.com/go/run/apiv2/runpb"

	"github.com/eventpipe/eventpipe/audit/inventory"
)

// addServices adds p's Cloud Run services.
func (b *builder) addServices(p *inventory.Project) {
	for _, svc := range p.Services {
		b.add(p.ID, TypeService, inventory.ShortName(svc.GetName()), svc.GetName(), serviceInputs(p.ID, svc))
	}
}

// serviceInputs are a Cloud Run v2 service's pulumi-gcp inputs: what the rules read
// (ingress, the invoker check, the containers' environment) and what identifies it.
func serviceInputs(project string, svc *runpb.Service) map[string]any {
	in := map[string]any{
		"name":     inventory.ShortName(svc.GetName()),
		"location": inventory.LocationOf(svc.GetName()),
		"project":  project,
	}
	if svc.GetIngress() != runpb.IngressTraffic_INGRESS_TRAFFIC_UNSPECIFIED {
		in["ingress"] = svc.GetIngress().String()
	}
	if svc.GetInvokerIamDisabled() {
		in["invokerIamDisabled"] = true
	}
	if d := svc.GetDescription(); d != "" {
		in["description"] = d
	}
	if len(svc.GetCustomAudiences()) > 0 {
		in["customAudiences"] = svc.GetCustomAudiences()
	}
	putLabels(in, "labels", svc.GetLabels())
	if t := svc.GetTemplate(); t != nil {
		in["template"] = templateInputs(t)
	}
	return in
}

func templateInputs(t *runpb.RevisionTemplate) map[string]any {
	out := map[string]any{}
	if sa := t.GetServiceAccount(); sa != "" {
		out["serviceAccount"] = sa
	}
	putDuration(out, "timeout", t.GetTimeout())
	if n := t.GetMaxInstanceRequestConcurrency(); n != 0 {
		out["maxInstanceRequestConcurrency"] = int(n)
	}
	if sc := t.GetScaling(); sc != nil {
		out["scaling"] = map[string]any{"minInstanceCount": int(sc.GetMinInstanceCount()), "maxInstanceCount": int(sc.GetMaxInstanceCount())}
	}
	putLabels(out, "labels", t.GetLabels())
	containers := make([]any, 0, len(t.GetContainers()))
	for _, c := range t.GetContainers() {
		cm := map[string]any{"image": c.GetImage()}
		if c.GetName() != "" {
			cm["name"] = c.GetName()
		}
		envs := make([]any, 0, len(c.GetEnv()))
		for _, e := range c.GetEnv() {
			env := map[string]any{"name": e.GetName()}
			if src := e.GetValueSource(); src != nil {
				// A secret reference: its value is not shown (pulumi-gcp: valueSource).
				env["valueSource"] = map[string]any{"secretKeyRef": map[string]any{
					"secret": src.GetSecretKeyRef().GetSecret(), "version": src.GetSecretKeyRef().GetVersion(),
				}}
			} else {
				env["value"] = e.GetValue()
			}
			envs = append(envs, env)
		}
		if len(envs) > 0 {
			cm["envs"] = envs
		}
		containers = append(containers, cm)
	}
	out["containers"] = containers
	return out
}
