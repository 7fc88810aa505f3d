package spec

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// IngressAll accepts requests from anywhere; Cloud Run then lets in only
// callers with roles/run.invoker (the push and callback accounts), and the
// consumer checks their OIDC tokens again. Allowed only with
// consumer.callbackAccounts: it is the way for Cloud Run jobs without VPC
// egress to call back (their requests are not internal).
const IngressAll = "all"

// Direct VPC egress settings of consumer.vpcAccess.egress (Cloud Run's names).
const (
	// EgressPrivateRanges sends only traffic to private addresses through the VPC.
	EgressPrivateRanges = "PRIVATE_RANGES_ONLY"
	// EgressAllTraffic sends every request through the VPC.
	EgressAllTraffic = "ALL_TRAFFIC"
)

var (
	// networkPattern is a VPC network or subnetwork: a name, or its full name.
	networkPattern = regexp.MustCompile(`^((projects/[a-z][a-z0-9:.-]*[a-z0-9]/)?(global|regions/[a-z]+-[a-z]+[0-9]+)/(networks|subnetworks)/)?[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`)
	// networkTagPattern is a Compute Engine network tag.
	networkTagPattern = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`)
	// cloudSQLPattern is a Cloud SQL instance connection name, PROJECT:REGION:INSTANCE
	// (a domain-scoped project is written DOMAIN:PROJECT).
	cloudSQLPattern = regexp.MustCompile(`^(([a-z0-9.-]+:)?[a-z][a-z0-9-]{4,28}[a-z0-9]):([a-z]+-[a-z]+[0-9]+):([a-z][a-z0-9-]{0,97})$`)
)

// CloudSQLProject returns the project of a Cloud SQL instance connection
// name (PROJECT:REGION:INSTANCE), ok false when it is not one.
func CloudSQLProject(instance string) (project string, ok bool) {
	m := cloudSQLPattern.FindStringSubmatch(instance)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// readBool reads a top-level boolean key (Pulumi hands config values over
// as text), nil when unset.
func readBool(c *collector, src Source, key string) *bool {
	full := Namespace + ":" + key
	v, ok := src.Get(full)
	if !ok {
		return nil
	}
	b, err := strconv.ParseBool(strings.TrimSpace(v))
	if err != nil {
		c.add("", full, strconv.Quote(v), "true or false", "write "+full+": false to manage the APIs elsewhere, or remove the key")
		return nil
	}
	return &b
}

// validateNetwork checks consumer.vpcAccess and consumer.cloudSqlInstances
// and fills the egress default.
func validateNetwork(c *collector, p *Pipeline, path string) {
	k := &p.Consumer
	if v := k.VPCAccess; v != nil {
		vp := path + ".vpcAccess"
		if !networkPattern.MatchString(v.Network) || strings.Contains(v.Network, "subnetworks/") {
			c.add(p.Name, vp+".network", quoteOrEmpty(v.Network), "a VPC network name or projects/PROJECT/global/networks/NETWORK",
				"set the network the store is reachable in (`gcloud compute networks list`)")
		}
		if v.Subnetwork != "" && (!networkPattern.MatchString(v.Subnetwork) || strings.Contains(v.Subnetwork, "networks/") && !strings.Contains(v.Subnetwork, "subnetworks/")) {
			c.add(p.Name, vp+".subnetwork", strconv.Quote(v.Subnetwork), "a subnet name or projects/PROJECT/regions/REGION/subnetworks/SUBNET",
				"set a subnet of the network in the consumer's region (`gcloud compute networks subnets list --network NETWORK`)")
		}
		checkEach(c, p.Name, vp+".tags", v.Tags, networkTagPattern.MatchString, "",
			"a network tag: lowercase letters, digits and -, starting with a letter, at most 63 characters", "rename the tag to match the firewall rule's target tag")
		switch v.Egress {
		case "":
			v.Egress = EgressPrivateRanges
		case EgressPrivateRanges, EgressAllTraffic:
		default:
			c.add(p.Name, vp+".egress", strconv.Quote(v.Egress), EgressPrivateRanges+" or "+EgressAllTraffic,
				"use PRIVATE_RANGES_ONLY to reach private addresses (Google APIs stay direct), or ALL_TRAFFIC to send everything through the VPC")
		}
	}
	if k.WorkerPool {
		validateWorkerPool(c, p, path)
	}
	checkEach(c, p.Name, path+".cloudSqlInstances", k.CloudSQLInstances, cloudSQLPattern.MatchString, "each instance once",
		"an instance connection name, PROJECT:REGION:INSTANCE", "copy connectionName from `gcloud sql instances describe INSTANCE --format='value(connectionName)'`")
}

// validateWorkerPool checks that a consumer on a worker pool needs no HTTP
// endpoint: every subscription is pulled, at least one by the consumer,
// and nothing calls back.
func validateWorkerPool(c *collector, p *Pipeline, path string) {
	k := &p.Consumer
	pulls := false
	for _, key := range SortedKeys(p.Subscriptions) {
		sub := p.Subscriptions[key]
		if sub == nil {
			continue
		}
		if sub.Push() {
			c.add(p.Name, path+".workerPool", "true", "only when every subscription is pulled (subscriptions."+key+" is push)",
				"remove workerPool, or make subscriptions."+key+" delivery: pull; Pub/Sub pushes to an HTTP endpoint, which a worker pool does not have")
		}
		pulls = pulls || sub.ConsumerPulls()
	}
	if !pulls {
		c.add(p.Name, path+".workerPool", "true", "a consumer that pulls at least one subscription",
			"add a pull subscription the consumer reads (not external), or remove workerPool")
	}
	if len(k.CallbackAccounts) > 0 {
		c.add(p.Name, path+".callbackAccounts", fmt.Sprintf("(%d accounts)", len(k.CallbackAccounts)), "none with workerPool",
			"remove callbackAccounts, or workerPool: callbacks are HTTP requests, and a worker pool has no endpoint")
	}
	if milli, ok := ParseCPU(k.CPU); ok && milli%1000 == 0 && milli/1000 == 6 {
		c.add(p.Name, path+".cpu", strconv.Quote(k.CPU), `"1", "2", "4" or "8" on a worker pool`, `set cpu: "4" or "8"; worker pools do not offer 6 CPUs`)
	}
	if k.Ingress != "" && k.Ingress != IngressInternal {
		c.add(p.Name, path+".ingress", strconv.Quote(k.Ingress), "unset with workerPool", "remove ingress: a worker pool takes no requests")
	}
}
