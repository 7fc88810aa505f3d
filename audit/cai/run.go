package cai

import (
	"encoding/json"
	"fmt"

	"cloud.google.com/go/run/apiv2/runpb"
)

// service decodes a Cloud Run service's resource data into the v2 API's type. Cloud
// Asset Inventory holds Cloud Run services in the Admin API v1 (Knative serving) shape;
// data in the v2 shape is read as well.
func service(data []byte, full string) (*runpb.Service, error) {
	var probe struct {
		APIVersion string          `json:"apiVersion"`
		Metadata   json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("the resource data is not a Cloud Run service: %w", err)
	}
	if probe.APIVersion == "" && probe.Metadata == nil {
		svc := &runpb.Service{}
		if err := decode.Unmarshal(data, svc); err != nil {
			return nil, fmt.Errorf("the resource data is not a Cloud Run v2 service: %w", err)
		}
		svc.Name = full
		return svc, nil
	}
	var k knativeService
	if err := json.Unmarshal(data, &k); err != nil {
		return nil, fmt.Errorf("the resource data is not a Cloud Run (serving.knative.dev/v1) service: %w", err)
	}
	return k.v2(full), nil
}

// knativeService is the part of a Cloud Run Admin API v1 Service the audit reads.
type knativeService struct {
	Metadata struct {
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		Template struct {
			Spec struct {
				ServiceAccountName string `json:"serviceAccountName"`
				Containers         []struct {
					Name  string `json:"name"`
					Image string `json:"image"`
					Env   []struct {
						Name      string `json:"name"`
						Value     string `json:"value"`
						ValueFrom *struct {
							SecretKeyRef *struct {
								Name string `json:"name"`
								Key  string `json:"key"`
							} `json:"secretKeyRef"`
						} `json:"valueFrom"`
					} `json:"env"`
				} `json:"containers"`
			} `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
	Status struct {
		URL     string `json:"url"`
		Address struct {
			URL string `json:"url"`
		} `json:"address"`
	} `json:"status"`
}

// ingressV1 maps the run.googleapis.com/ingress annotation to the v2 setting.
var ingressV1 = map[string]runpb.IngressTraffic{
	"all":                               runpb.IngressTraffic_INGRESS_TRAFFIC_ALL,
	"internal":                          runpb.IngressTraffic_INGRESS_TRAFFIC_INTERNAL_ONLY,
	"internal-and-cloud-load-balancing": runpb.IngressTraffic_INGRESS_TRAFFIC_INTERNAL_LOAD_BALANCER,
}

func (k *knativeService) v2(full string) *runpb.Service {
	ann := k.Metadata.Annotations
	svc := &runpb.Service{
		Name:               full,
		Labels:             k.Metadata.Labels,
		Annotations:        ann,
		Ingress:            ingressV1[ann["run.googleapis.com/ingress"]],
		InvokerIamDisabled: ann["run.googleapis.com/invoker-iam-disabled"] == "true",
		Uri:                k.Status.URL,
	}
	if k.Status.Address.URL != "" && k.Status.Address.URL != k.Status.URL {
		svc.Urls = append(svc.Urls, k.Status.Address.URL)
	}
	var urls []string
	if json.Unmarshal([]byte(ann["run.googleapis.com/urls"]), &urls) == nil {
		svc.Urls = append(svc.Urls, urls...)
	}
	tmpl := &runpb.RevisionTemplate{ServiceAccount: k.Spec.Template.Spec.ServiceAccountName}
	for _, c := range k.Spec.Template.Spec.Containers {
		rc := &runpb.Container{Name: c.Name, Image: c.Image}
		for _, e := range c.Env {
			ev := &runpb.EnvVar{Name: e.Name}
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				ev.Values = &runpb.EnvVar_ValueSource{ValueSource: &runpb.EnvVarSource{
					SecretKeyRef: &runpb.SecretKeySelector{Secret: e.ValueFrom.SecretKeyRef.Name, Version: e.ValueFrom.SecretKeyRef.Key},
				}}
			} else {
				ev.Values = &runpb.EnvVar_Value{Value: e.Value}
			}
			rc.Env = append(rc.Env, ev)
		}
		tmpl.Containers = append(tmpl.Containers, rc)
	}
	svc.Template = tmpl
	return svc
}
