package cai

import (
	"encoding/json"
	"fmt"

	"cloud.google.com/go/run/apiv2/runpb"
	runv1 "google.golang.org/api/run/v1"
)

// service decodes a Cloud Run service's resource data into the v2 API's type. Cloud
// Asset Inventory holds Cloud Run services in the Admin API v1 (Knative serving) shape,
// which Google's run/v1 client types decode; data in the v2 shape is read as well.
func service(data []byte, full string) (*runpb.Service, error) {
	var k runv1.Service
	if err := json.Unmarshal(data, &k); err != nil {
		return nil, fmt.Errorf("the resource data is not a Cloud Run service: %w", err)
	}
	if k.ApiVersion == "" && k.Metadata == nil {
		svc := &runpb.Service{}
		if err := decode.Unmarshal(data, svc); err != nil {
			return nil, fmt.Errorf("the resource data is not a Cloud Run v2 service: %w", err)
		}
		svc.Name = full
		return svc, nil
	}
	return v2(&k, full), nil
}

// ingressV1 maps the run.googleapis.com/ingress annotation to the v2 setting.
var ingressV1 = map[string]runpb.IngressTraffic{
	"all":                               runpb.IngressTraffic_INGRESS_TRAFFIC_ALL,
	"internal":                          runpb.IngressTraffic_INGRESS_TRAFFIC_INTERNAL_ONLY,
	"internal-and-cloud-load-balancing": runpb.IngressTraffic_INGRESS_TRAFFIC_INTERNAL_LOAD_BALANCER,
}

// v2 is the part of a v1 service the audit reads, in the v2 shape: labels, annotations,
// ingress, the invoker check, URLs, the service account and the containers' environment.
func v2(k *runv1.Service, full string) *runpb.Service {
	meta, status, spec := orZero(k.Metadata), orZero(k.Status), &runv1.RevisionSpec{}
	if k.Spec != nil && k.Spec.Template != nil && k.Spec.Template.Spec != nil {
		spec = k.Spec.Template.Spec
	}
	ann := meta.Annotations
	svc := &runpb.Service{
		Name:               full,
		Labels:             meta.Labels,
		Annotations:        ann,
		Ingress:            ingressV1[ann["run.googleapis.com/ingress"]],
		InvokerIamDisabled: ann["run.googleapis.com/invoker-iam-disabled"] == "true",
		Uri:                status.Url,
	}
	if a := orZero(status.Address).Url; a != "" && a != status.Url {
		svc.Urls = append(svc.Urls, a)
	}
	var urls []string
	if json.Unmarshal([]byte(ann["run.googleapis.com/urls"]), &urls) == nil {
		svc.Urls = append(svc.Urls, urls...)
	}
	tmpl := &runpb.RevisionTemplate{ServiceAccount: spec.ServiceAccountName}
	for _, c := range spec.Containers {
		c := orZero(c)
		rc := &runpb.Container{Name: c.Name, Image: c.Image}
		for _, e := range c.Env {
			e := orZero(e)
			ev := &runpb.EnvVar{Name: e.Name, Values: &runpb.EnvVar_Value{Value: e.Value}}
			if ref := orZero(e.ValueFrom).SecretKeyRef; ref != nil {
				ev.Values = &runpb.EnvVar_ValueSource{ValueSource: &runpb.EnvVarSource{
					SecretKeyRef: &runpb.SecretKeySelector{Secret: ref.Name, Version: ref.Key},
				}}
			}
			rc.Env = append(rc.Env, ev)
		}
		tmpl.Containers = append(tmpl.Containers, rc)
	}
	svc.Template = tmpl
	return svc
}

// orZero is *p, or the zero value for nil (the client types have no nil-safe getters).
func orZero[T any](p *T) *T {
	if p == nil {
		return new(T)
	}
	return p
}
