package gcpstandin

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// The project of the generated deployments, its number, and a Shared VPC host project.
const (
	gProject = "p"
	gNumber  = "100"
	gHost    = "h"
	gAccount = "run@p.iam.gserviceaccount.com"
	gPush    = "push@p.iam.gserviceaccount.com"
	gAgent   = "serviceAccount:service-100@gcp-sa-pubsub.iam.gserviceaccount.com"
)

// grantVariant is how a generated deployment has made one grant it needs.
type grantVariant int

const (
	grantAbsent      grantVariant = iota // not made
	grantYoung                           // made less than the propagation delay ago
	grantEffective                       // made the delay ago or longer
	grantOnProject                       // made on the resource's project instead, long ago
	grantOtherMember                     // made long ago, to another member
	grantElsewhere                       // made long ago, on another resource or project
	grantVariants
)

func (v grantVariant) meets() bool { return v == grantEffective || v == grantOnProject }

// key is the role, member and project of a grant on w's resource or its project.
func (w wanted) key() string {
	project, _ := w.state["project"].(string)
	if w.field == "serviceAccountId" {
		project = gProject
	}
	return fmt.Sprint(w.state["role"], " ", w.state["member"], " ", project)
}

// wanted is a grant a generated create needs, as the components declare it: an IAM
// member of typ with state (role, member and the field naming the resource).
type wanted struct {
	typ   string
	field string // the state's field naming the resource or, for a project grant, "project"
	state map[string]any
}

// grantCase is a generated create (rec) in the state st holds besides its grants, and
// the grants it needs.
type grantCase struct {
	what  string
	rec   Record
	st    map[string]Record
	needs []wanted
}

func member(typ, field, target, role, who string, extra ...string) wanted {
	st := map[string]any{field: target, "role": role, "member": who}
	for i := 0; i+1 < len(extra); i += 2 {
		st[extra[i]] = extra[i+1]
	}
	return wanted{typ: typ, field: field, state: st}
}

func projectGrant(project, role, who string) wanted {
	return member(typeProjectMember, "project", project, role, who)
}

// genRevision is a Cloud Run service or worker pool as the components declare a
// consumer's, with a random store, Shared VPC egress, trace collector and pulled
// subscriptions, and the grants its revision needs.
func genRevision(r *rand.Rand) grantCase {
	typ := []string{tService, tWorkerPool}[r.IntN(2)]
	account := "serviceAccount:" + gAccount
	st := map[string]Record{}
	add := func(typ, id string, state map[string]any) {
		st[typ+"::"+id] = Record{Type: typ, Name: id[strings.LastIndex(id, "/")+1:], ID: id, State: state}
	}
	var needs []wanted
	var what []string
	consumer := map[string]any{"name": "consumer", "image": "consumer:1"}
	if typ == tService {
		consumer["ports"] = map[string]any{"containerPort": float64(8080)}
	}
	envs := []any{}
	tmpl := map[string]any{"serviceAccount": gAccount}
	switch r.IntN(4) {
	case 0:
		what = append(what, "Firestore store")
		envs = append(envs, map[string]any{"name": "EVENTPIPE_STORE", "value": "firestore://" + gProject + "/(default)"})
		needs = append(needs, projectGrant(gProject, roleDatastoreUser, account))
	case 1:
		what = append(what, "Cloud SQL store")
		envs = append(envs, map[string]any{"name": "EVENTPIPE_STORE", "value": "postgres://app:pw@/orders?host=/cloudsql/p:europe-west1:db"})
		tmpl["volumes"] = []any{map[string]any{"name": "cloudsql", "cloudSqlInstance": map[string]any{"instances": []any{"p:europe-west1:db"}}}}
		needs = append(needs, projectGrant(gProject, roleCloudSQLClient, account))
	case 2:
		what = append(what, "secret store")
		envs = append(envs, map[string]any{"name": "EVENTPIPE_STORE", "valueSource": map[string]any{
			"secretKeyRef": map[string]any{"secret": "svc-store", "version": "1"}}})
		add("gcp:secretmanager/secretVersion:SecretVersion", "svc-store", map[string]any{
			"secret": "projects/p/secrets/svc-store", "secretData": "postgres://app:pw@db.example.com/orders"})
		needs = append(needs, member(typeSecretMember, "secretId", "svc-store", roleSecretAccessor, account, "project", gProject))
	default:
		what = append(what, "plain store")
		envs = append(envs, map[string]any{"name": "EVENTPIPE_STORE", "value": "postgres://app:pw@db.example.com/orders"})
	}
	if r.IntN(2) == 0 {
		what = append(what, "Shared VPC")
		tmpl["vpcAccess"] = map[string]any{"networkInterfaces": []any{map[string]any{
			"network": "projects/h/global/networks/shared", "subnetwork": "projects/h/regions/europe-west1/subnetworks/run"}}}
		needs = append(needs, member(typeSubnetworkMember, "subnetwork", "run", roleNetworkUser,
			"serviceAccount:service-"+gNumber+"@serverless-robot-prod.iam.gserviceaccount.com", "project", gHost))
	}
	var pulls []string
	for i := range r.IntN(3) {
		name := fmt.Sprintf("sub-%d", i)
		sub := map[string]any{"project": gProject, "name": name, "topic": "projects/p/topics/t"}
		what = append(what, "pulls "+name)
		needs = append(needs, member(typeSubscriptionMember, "subscription", name, roleSubscriber, account, "project", gProject))
		if r.IntN(2) == 0 {
			what = append(what, "with a dead-letter topic")
			sub["deadLetterPolicy"] = map[string]any{"deadLetterTopic": "projects/p/topics/" + name + ".dlq"}
			needs = append(needs, member(typeTopicMember, "topic", name+".dlq", rolePublisher, gAgent, "project", gProject),
				member(typeSubscriptionMember, "subscription", name, roleSubscriber, gAgent, "project", gProject))
		}
		add("gcp:pubsub/subscription:Subscription", "projects/p/subscriptions/"+name, sub)
		pulls = append(pulls, "projects/p/subscriptions/"+name)
	}
	if len(pulls) > 0 {
		envs = append(envs, map[string]any{"name": "EVENTPIPE_PULL_SUBSCRIPTIONS", "value": strings.Join(pulls, ",")})
	}
	consumer["envs"] = envs
	containers := []any{consumer}
	if r.IntN(2) == 0 {
		what = append(what, "trace collector")
		containers = append(containers, map[string]any{"name": "collector",
			"image": "us-docker.pkg.dev/cloud-ops-agents-artifacts/google-cloud-opentelemetry-collector/otelcol-google:0.151.0"})
		needs = append(needs, projectGrant(gProject, roleTraceAgent, account))
	}
	tmpl["containers"] = containers
	in := map[string]any{"project": gProject, "location": "europe-west1", "name": "svc", "template": tmpl}
	return grantCase{what: typ + ": " + strings.Join(what, ", "), rec: Record{Type: typ, Name: "svc", State: in}, st: st, needs: needs}
}

// genPush is a push subscription to an existing Cloud Run service, with or without a
// dead-letter topic, and the grants its deliveries need.
func genPush(r *rand.Rand) grantCase {
	st := map[string]Record{
		"svc":   {Type: tService, Name: "svc", State: map[string]any{"project": gProject, "name": "svc", "uri": "https://svc-100.europe-west1.run.app"}},
		"topic": {Type: "gcp:pubsub/topic:Topic", Name: "t", ID: "projects/p/topics/t", State: map[string]any{"project": gProject, "name": "t"}},
	}
	in := map[string]any{"project": gProject, "name": "push-sub", "topic": "projects/p/topics/t", "pushConfig": map[string]any{
		"pushEndpoint": "https://svc-100.europe-west1.run.app/pubsub/push", "oidcToken": map[string]any{"serviceAccountEmail": gPush}}}
	needs := []wanted{
		member(typeServiceMember, "name", "svc", roleRunInvoker, "serviceAccount:"+gPush, "project", gProject, "location", "europe-west1"),
		member(typeAccountMember, "serviceAccountId", "projects/p/serviceAccounts/"+gPush, roleTokenCreator, gAgent),
	}
	what := "push subscription"
	if r.IntN(2) == 0 {
		what += " with a dead-letter topic"
		in["deadLetterPolicy"] = map[string]any{"deadLetterTopic": "projects/p/topics/push-sub.dlq"}
		st["dlq"] = Record{Type: "gcp:pubsub/topic:Topic", Name: "push-sub.dlq", ID: "projects/p/topics/push-sub.dlq",
			State: map[string]any{"project": gProject, "name": "push-sub.dlq"}}
		needs = append(needs, member(typeTopicMember, "topic", "push-sub.dlq", rolePublisher, gAgent, "project", gProject))
	}
	return grantCase{what: what, rec: Record{Type: "gcp:pubsub/subscription:Subscription", Name: "push-sub", State: in}, st: st, needs: needs}
}

// made is the grant w as variant v makes it, created at now less its age (false: none).
func made(r *rand.Rand, w wanted, v grantVariant, now time.Time, delay time.Duration) (Record, bool) {
	state := deepCopy(w.state).(map[string]any)
	typ := w.typ
	age := delay + time.Duration(r.Int64N(int64(time.Hour)))
	if r.IntN(4) == 0 {
		age = delay // exactly the delay: taken effect
	}
	switch v {
	case grantAbsent:
		return Record{}, false
	case grantYoung:
		age = time.Duration(r.Int64N(int64(delay)))
	case grantOnProject:
		project, _ := state["project"].(string)
		if w.field == "serviceAccountId" {
			project = gProject
		}
		typ, state = typeProjectMember, map[string]any{"project": project, "role": state["role"], "member": state["member"]}
	case grantOtherMember:
		state["member"] = "serviceAccount:someone-else@p.iam.gserviceaccount.com"
	case grantElsewhere:
		if w.field == "serviceAccountId" {
			state[w.field] = "projects/p/serviceAccounts/other@p.iam.gserviceaccount.com"
		} else {
			state[w.field] = "elsewhere"
		}
	}
	return Record{Type: typ, Name: "grant", State: state, Created: now.Add(-age)}, true
}

// TestGrantsTakeEffectBeforeUse holds every grant rule to its invariant, for generated
// deployments shaped as the components declare them (a consumer's service or worker pool
// with any store, Shared VPC egress, trace collector and pulled subscriptions with or
// without dead-letter topics; a push subscription with or without one), each grant it
// needs made in a random way: the create is refused exactly when some needed grant is
// missing, too young (less than the propagation delay, for any delay), made to another
// member or on another resource, and taken as made when granted on the resource's
// project instead; a refusal names the role of a grant that is not in effect, and says
// whether there is none or it is too young.
func TestGrantsTakeEffectBeforeUse(t *testing.T) {
	r := rand.New(rand.NewPCG(36, 3))
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for i := range 3000 {
		delay := time.Duration(1+r.IntN(600)) * time.Second
		s := &standin{enabled: []string{"*"}, projects: map[string]string{gProject: gNumber, gHost: "200"},
			grantPropagation: delay, apiPropagation: delay}
		c := genRevision(r)
		if r.IntN(3) == 0 {
			c = genPush(r)
		}
		st := c.st
		variants := make([]grantVariant, len(c.needs))
		onProject := map[string]bool{} // role, member, project granted on a project long ago
		var plan []string
		for j, w := range c.needs {
			v := grantVariant(r.IntN(int(grantVariants)))
			variants[j] = v
			plan = append(plan, fmt.Sprintf("%s %v: %d", w.state["role"], w.state[w.field], v))
			if g, made := made(r, w, v, now, delay); made {
				st[fmt.Sprintf("grant-%d", j)] = g
			}
			if v == grantOnProject {
				onProject[w.key()] = true
			}
		}
		// A grant on a project is in effect for every resource of the project.
		ok := true
		var notInEffect []string
		for j, w := range c.needs {
			if !variants[j].meets() && !onProject[w.key()] {
				ok = false
				notInEffect = append(notInEffect, w.state["role"].(string))
			}
		}
		c.rec.Created = now
		err := s.prerequisites(st, c.rec)
		switch {
		case ok && err != nil:
			t.Fatalf("case %d (%s, delay %s, grants %v): refused: %v", i, c.what, delay, plan, err)
		case !ok && err == nil:
			t.Fatalf("case %d (%s, delay %s, grants %v): created, though %v are not in effect", i, c.what, delay, plan, notInEffect)
		case !ok:
			named := false
			for _, role := range notInEffect {
				named = named || strings.Contains(err.Error(), role)
			}
			if !named || !strings.Contains(err.Error(), "no ") && !strings.Contains(err.Error(), " ago") {
				t.Fatalf("case %d (%s, grants %v): the refusal names none of %v, or not whether it is missing or young: %v", i, c.what, plan, notInEffect, err)
			}
		}
	}
}
