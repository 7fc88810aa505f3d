package live

import (
	"context"
	"errors"
	"slices"

	"cloud.google.com/go/iam/apiv1/iampb"
	"cloud.google.com/go/run/apiv2/runpb"

	"github.com/eventpipe/eventpipe/audit/inventory"
)

// readServices reads the Cloud Run services the project's push subscriptions target, with
// their IAM policies. A push to a *.run.app host no service of the project answers on (a
// service in another project, or one the identity cannot list) is a gap.
func (r *reader) readServices(ctx context.Context) {
	hosts := runHosts(r.p)
	if len(hosts) == 0 {
		return
	}
	if r.c.Services == nil {
		for _, h := range hosts {
			r.gap(inventory.GapService, h, errors.New(r.c.notRead("Cloud Run")))
		}
		return
	}
	all, err := collect(r.c.Services.ListServices(ctx, &runpb.ListServicesRequest{Parent: "projects/" + r.p.ID + "/locations/-"}).All())
	if err != nil {
		for _, h := range hosts {
			r.gap(inventory.GapService, h, refused("listing Cloud Run services", access{"run.services.list", "roles/run.viewer"}, err))
		}
		return
	}
	found := map[string]bool{}
	for _, svc := range all {
		targeted := false
		for _, h := range inventory.ServiceHosts(svc) {
			if slices.Contains(hosts, h) {
				targeted, found[h] = true, true
			}
		}
		if !targeted {
			continue
		}
		r.p.Services = append(r.p.Services, svc)
		pol, err := r.c.Services.GetIamPolicy(ctx, &iampb.GetIamPolicyRequest{Resource: svc.GetName()})
		if err != nil {
			r.gap(inventory.GapPolicy, svc.GetName(), refused("reading its IAM policy", access{"run.services.getIamPolicy", "roles/run.viewer"}, err))
			continue
		}
		r.setPolicy(svc.GetName(), pol)
	}
	for _, h := range hosts {
		if !found[h] {
			r.gap(inventory.GapService, h, errors.New("no Cloud Run service of this project answers on this host (it may be in another project)"))
		}
	}
}

// runHosts are the distinct *.run.app hosts the project's subscriptions push to.
func runHosts(p *inventory.Project) []string {
	var hosts []string
	for _, s := range p.Subscriptions {
		if h := inventory.PushHost(s); inventory.IsRunHost(h) {
			hosts = append(hosts, h)
		}
	}
	slices.Sort(hosts)
	return slices.Compact(hosts)
}
