// Command orders runs the checkout team's Pulumi program (package orders:
// its topic, on-call channel and eventpipe pipeline, whose store is
// PostgreSQL on a private address reached with Direct VPC egress). A team
// copies this folder and edits orders/orders.go.
//
//	pulumi stack select dev --create
//	pulumi config set --secret orders:storeUrl 'postgres://app:PASSWORD@10.0.0.5/orders'
//	pulumi config set orders:network shared-vpc
//	pulumi config set orders:subnetwork run-europe-west1
//	pulumi up
package main

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/eventpipe/eventpipe/examples/orders/orders"
)

func main() { pulumi.Run(orders.Program) }
