package live

import (
	"context"
	"errors"
	"strconv"

	"cloud.google.com/go/iam/apiv1/iampb"
	crm "google.golang.org/api/cloudresourcemanager/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/eventpipe/eventpipe/audit/inventory"
)

// readProject reads the project's number (which names its Pub/Sub service agent) and its
// own IAM policy (a project-wide grant to the service agent counts for every topic).
func (r *reader) readProject(ctx context.Context) {
	name := inventory.ProjectName(r.p.ID)
	if r.c.Projects == nil {
		r.gap(inventory.GapProjectNumber, name, errors.New(r.c.notRead("Resource Manager")))
		r.gap(inventory.GapPolicy, name, errors.New(r.c.notRead("Resource Manager")))
		return
	}
	proj, err := r.c.Projects.Projects.Get(r.p.ID).Context(ctx).Do()
	if err != nil {
		r.gap(inventory.GapProjectNumber, name, refused("reading the project", access{"resourcemanager.projects.get", "roles/browser"}, err))
	} else {
		r.mu.Lock()
		r.p.Number = strconv.FormatInt(proj.ProjectNumber, 10)
		r.mu.Unlock()
	}
	pol, err := r.c.Projects.Projects.GetIamPolicy(r.p.ID, &crm.GetIamPolicyRequest{
		Options: &crm.GetPolicyOptions{RequestedPolicyVersion: 3},
	}).Context(ctx).Do()
	var policy *iampb.Policy
	if err == nil {
		policy, err = fromCRM(pol)
	}
	if err != nil {
		r.gap(inventory.GapPolicy, name, refused("reading the project's IAM policy", access{"resourcemanager.projects.getIamPolicy", "roles/iam.securityReviewer"}, err))
		return
	}
	r.setPolicy(name, policy)
}

// fromCRM converts a Resource Manager policy to the IAM API's type the inventory holds:
// both APIs write a policy as the same JSON document.
func fromCRM(p *crm.Policy) (*iampb.Policy, error) {
	data, err := p.MarshalJSON()
	if err != nil {
		return nil, err
	}
	out := &iampb.Policy{}
	return out, protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(data, out)
}
