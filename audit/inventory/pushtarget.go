package inventory

import (
	"net/url"
	"strings"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/run/apiv2/runpb"
)

// PushHost is the lower-case host of a push subscription's endpoint, or "" for a
// subscription that does not push (or an endpoint that is not a URL).
func PushHost(s *pubsubpb.Subscription) string {
	endpoint := s.GetPushConfig().GetPushEndpoint()
	if endpoint == "" {
		return ""
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Hostname())
}

// IsRunHost reports whether host is a Cloud Run service URL host (*.run.app).
func IsRunHost(host string) bool {
	return strings.HasSuffix(host, ".run.app")
}

// ServiceHosts are the lower-case hosts a Cloud Run service answers on: its uri and urls.
func ServiceHosts(svc *runpb.Service) []string {
	var hosts []string
	for _, raw := range append([]string{svc.GetUri()}, svc.GetUrls()...) {
		if raw == "" {
			continue
		}
		if u, err := url.Parse(raw); err == nil && u.Hostname() != "" {
			hosts = append(hosts, strings.ToLower(u.Hostname()))
		}
	}
	return hosts
}

// PushTarget is the service among services that subscription s pushes to, or nil.
func PushTarget(s *pubsubpb.Subscription, services []*runpb.Service) *runpb.Service {
	host := PushHost(s)
	if host == "" {
		return nil
	}
	for _, svc := range services {
		for _, h := range ServiceHosts(svc) {
			if h == host {
				return svc
			}
		}
	}
	return nil
}
