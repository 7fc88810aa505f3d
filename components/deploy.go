package components

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/eventpipe/eventpipe/spec"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/cloudrunv2"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/projects"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// What spec accepts for any runtime but a consumer on Cloud Run cannot
// use: checked by the components, not by spec, because `eventpipe dev`
// runs the same config on a laptop, where a bbolt file or a database on
// 10.0.0.5 is fine. Each problem names the keys that fix it.

// cloudSQLMount is where the Cloud Run Cloud SQL volume puts the instances'
// sockets, /cloudsql/PROJECT:REGION:INSTANCE.
const cloudSQLMount = "/cloudsql"

// storeNeeds is what reaching a store URL from Cloud Run takes.
type storeNeeds struct {
	// perInstance is true for bbolt and mem stores, which live inside one instance.
	perInstance bool
	// private lists the store's hosts on private addresses (Direct VPC egress needed).
	private []string
	// cloudSQL is the instance of a host=/cloudsql/INSTANCE socket.
	cloudSQL string
}

// needsOf reads what the store URL needs. A URL it cannot parse needs
// nothing here (spec reports it).
func needsOf(storeURL string) storeNeeds {
	var n storeNeeds
	switch {
	case strings.HasPrefix(storeURL, "bbolt://"), strings.HasPrefix(storeURL, "mem://"):
		n.perInstance = true
		return n
	case !strings.HasPrefix(storeURL, "postgres://") && !strings.HasPrefix(storeURL, "postgresql://"):
		return n
	}
	u, err := url.Parse(storeURL)
	if err != nil {
		return n
	}
	hosts := strings.Split(u.Host, ",")
	if h := u.Query().Get("host"); h != "" {
		hosts = append(hosts, strings.Split(h, ",")...)
	}
	for _, h := range hosts {
		if inst, ok := strings.CutPrefix(h, cloudSQLMount+"/"); ok {
			n.cloudSQL = inst
			continue
		}
		if host, _, err := net.SplitHostPort(h); err == nil {
			h = host
		}
		h = strings.Trim(h, "[]")
		if a, err := netip.ParseAddr(h); err == nil && a.IsPrivate() {
			n.private = append(n.private, h)
		}
	}
	return n
}

// storeProblems are the reasons the consumer k cannot reach storeURL from
// Cloud Run; path is the key the URL was set at, consumer the consumer's
// config path. shown is how the URL may be printed.
func storeProblems(k *spec.Consumer, storeURL, shown, path, consumer string) spec.Errors {
	n := needsOf(storeURL)
	var out spec.Errors
	if n.perInstance {
		out = append(out, spec.FieldError{Path: path, Value: shown,
			Allowed: "a store every instance shares: firestore://PROJECT/DATABASE or postgres://… on Cloud Run",
			Fix: "use firestore://PROJECT/(default) or a PostgreSQL URL: a bbolt or mem store lives inside one Cloud Run instance, " +
				"so it is lost when the instance stops and each instance dedupes only its own messages (eventpipe dev still runs it locally)"})
	}
	if len(n.private) > 0 && k.VPCAccess == nil {
		out = append(out, spec.FieldError{Path: consumer + ".vpcAccess", Value: "(unset)",
			Allowed: "Direct VPC egress for a store on the private address " + strings.Join(n.private, ", "),
			Fix: "set " + consumer + ".vpcAccess.network and .subnetwork (the VPC and subnet the database is reachable from); " +
				"without them the consumer cannot open its store, its revision never becomes ready and the deployment fails. " +
				"For Cloud SQL, list the instance in " + consumer + ".cloudSqlInstances and connect through host=/cloudsql/PROJECT:REGION:INSTANCE instead"})
	}
	if n.cloudSQL != "" && !slices.Contains(k.CloudSQLInstances, n.cloudSQL) {
		out = append(out, spec.FieldError{Path: consumer + ".cloudSqlInstances", Value: strconv.Quote(strings.Join(k.CloudSQLInstances, ",")),
			Allowed: "the instance the store's host=/cloudsql/" + n.cloudSQL + " socket names",
			Fix:     "add " + strconv.Quote(n.cloudSQL) + " to " + consumer + ".cloudSqlInstances, so Cloud Run mounts its socket at /cloudsql and the consumer's account gets roles/cloudsql.client"})
	}
	return out
}

// deployProblems are the problems of pipeline p of st on Cloud Run, on
// stack config paths (argsError maps them to component arguments). A
// secret store URL the program cannot read here is checked when it is
// known (checkedStoreSecret).
func deployProblems(st *spec.Stack, p *spec.Pipeline) spec.Errors {
	k := &p.Consumer
	consumer := spec.Namespace + ":" + spec.KeyPipelines + "." + p.Name + ".consumer"
	path, shown := consumer+".store", strconv.Quote(k.Store)
	if st.Store != "" && k.Store == st.Store {
		path = spec.Namespace + ":" + spec.KeyStore
		if st.StoreSecret {
			shown = spec.OfflineSecret
		}
	}
	var out spec.Errors
	if k.Store != spec.OfflineSecret {
		out = append(out, storeProblems(k, k.Store, shown, path, consumer)...)
	}
	for i := range out {
		out[i].Pipeline = p.Name
	}
	return out
}

// RoleNetworkUser lets the Cloud Run service agent attach a revision to a
// Shared VPC subnet (cloud.google.com/run/docs/configuring/shared-vpc-direct-vpc).
const RoleNetworkUser = "roles/compute.networkUser"

// sharedVPC returns the host project, region and subnet name of Direct VPC
// egress v when it names a network or subnetwork of another project than
// project (a Shared VPC), host "" otherwise. region is the consumer's,
// the subnet's unless the subnetwork's full name says another.
func sharedVPC(project, region string, v *spec.VPCAccess) (host, subnetRegion, subnet string) {
	subnet, subnetRegion = v.Subnetwork, region
	if rest, ok := strings.CutPrefix(v.Subnetwork, "projects/"); ok {
		parts := strings.Split(rest, "/") // HOST/regions/REGION/subnetworks/NAME
		if len(parts) == 5 {
			host, subnetRegion, subnet = parts[0], parts[2], parts[4]
		}
	} else if rest, ok := strings.CutPrefix(v.Network, "projects/"); ok {
		host, _, _ = strings.Cut(rest, "/")
		if subnet == "" {
			subnet = v.Network[strings.LastIndex(v.Network, "/")+1:]
		}
	}
	if host == project {
		host = ""
	}
	return host, subnetRegion, subnet
}

// subnetworkIAMMember is a gcp:compute/subnetworkIAMMember:SubnetworkIAMMember,
// declared by its type token: pulumi-gcp's compute package is 17 MB of Go,
// which every build and test run would compile for this one resource.
type subnetworkIAMMember struct {
	pulumi.CustomResourceState
}

// grantSharedVPC grants the Cloud Run service agent of the scope's project
// roles/compute.networkUser on the Shared VPC subnet the consumer's egress
// uses, in the host project (nil when the egress is not on a Shared VPC):
// without it Cloud Run refuses to attach the revision.
func grantSharedVPC(ctx *pulumi.Context, name string, sc *scope, parent pulumi.ResourceOption) (pulumi.Resource, error) {
	v := sc.pipeline.Consumer.VPCAccess
	if v == nil {
		return nil, nil
	}
	host, region, subnet := sharedVPC(sc.stack.Project, sc.stack.Region, v)
	if host == "" {
		return nil, nil
	}
	grant := &subnetworkIAMMember{}
	err := ctx.RegisterResource("gcp:compute/subnetworkIAMMember:SubnetworkIAMMember", name+"-run-agent-network-user", pulumi.Map{
		"project":    pulumi.String(host),
		"region":     pulumi.String(region),
		"subnetwork": pulumi.String(subnet),
		"role":       pulumi.String(RoleNetworkUser),
		"member":     pulumi.Sprintf("serviceAccount:service-%s@serverless-robot-prod.iam.gserviceaccount.com", sc.projectNumber),
	}, grant, parent, pulumi.Version(gcpVersion()))
	if err != nil {
		return nil, fmt.Errorf("grant the Cloud Run service agent network user on %s: %w", subnet, err)
	}
	return grant, nil
}

// gcpVersion is the pulumi-gcp version this module is built with (go.mod),
// for a resource declared by its type token to use the same gcp provider
// as the SDK's.
func gcpVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, m := range info.Deps {
			if m.Path == "github.com/pulumi/pulumi-gcp/sdk/v8" {
				return strings.TrimPrefix(m.Version, "v")
			}
		}
	}
	return ""
}

// cloudSQLVolume is the name of the consumer's Cloud SQL volume.
const cloudSQLVolume = "cloudsql"

// vpcAccess is the service's Direct VPC egress (nil for none).
func vpcAccess(v *spec.VPCAccess) *cloudrunv2.ServiceTemplateVpcAccessArgs {
	if v == nil {
		return nil
	}
	nic := &cloudrunv2.ServiceTemplateVpcAccessNetworkInterfaceArgs{Network: pulumi.String(v.Network)}
	if len(v.Tags) > 0 {
		nic.Tags = pulumi.ToStringArray(v.Tags)
	}
	if v.Subnetwork != "" {
		nic.Subnetwork = pulumi.String(v.Subnetwork)
	}
	return &cloudrunv2.ServiceTemplateVpcAccessArgs{
		Egress:            pulumi.String(v.Egress),
		NetworkInterfaces: cloudrunv2.ServiceTemplateVpcAccessNetworkInterfaceArray{nic},
	}
}

// cloudSQLVolumes is the Cloud SQL volume of instances (none without any),
// which the consumer container mounts at /cloudsql.
func cloudSQLVolumes(instances []string) cloudrunv2.ServiceTemplateVolumeArray {
	if len(instances) == 0 {
		return nil
	}
	return cloudrunv2.ServiceTemplateVolumeArray{&cloudrunv2.ServiceTemplateVolumeArgs{
		Name:             pulumi.String(cloudSQLVolume),
		CloudSqlInstance: &cloudrunv2.ServiceTemplateVolumeCloudSqlInstanceArgs{Instances: pulumi.ToStringArray(instances)},
	}}
}

// grantCloudSQL grants member roles/cloudsql.client on the project of each
// of the consumer's Cloud SQL instances (once per project) and returns the
// grants the service waits for.
func grantCloudSQL(ctx *pulumi.Context, name string, sc *scope, member pulumi.StringInput, parent pulumi.ResourceOption) ([]pulumi.Resource, error) {
	projectsSeen := map[string]bool{}
	for _, inst := range sc.pipeline.Consumer.CloudSQLInstances {
		project, _ := spec.CloudSQLProject(inst)
		projectsSeen[project] = true
	}
	var grants []pulumi.Resource
	for _, project := range spec.SortedKeys(projectsSeen) {
		resName := name + "-run-cloudsql-client"
		if project != sc.stack.Project {
			resName += "-" + strings.ReplaceAll(project, ":", "-")
		}
		grant, err := projects.NewIAMMember(ctx, resName, &projects.IAMMemberArgs{
			Project: sc.d.str(project),
			Role:    pulumi.String(RoleCloudSQLClient),
			Member:  member,
		}, parent)
		if err != nil {
			return nil, fmt.Errorf("grant consumer %s cloudsql.client on %s: %w", name, project, err)
		}
		grants = append(grants, grant)
	}
	return grants, nil
}

// checkedStoreSecret is a secret store URL checked like a known one once
// its value is known (at preview, for a secret from config): a URL the
// consumer cannot reach from Cloud Run fails the deployment before
// anything is created, naming the keys that fix it.
func checkedStoreSecret(sc *scope, url pulumi.StringInput) pulumi.StringOutput {
	k := &sc.pipeline.Consumer
	name := sc.pipeline.Name
	return url.ToStringOutput().ApplyT(func(v string) (string, error) {
		problems := storeProblems(k, v, spec.OfflineSecret, spec.Namespace+":"+spec.KeyStore, spec.Namespace+":"+spec.KeyPipelines+"."+name+".consumer")
		if len(problems) > 0 {
			return "", argsError("consumer", name, problems)
		}
		return v, nil
	}).(pulumi.StringOutput)
}
