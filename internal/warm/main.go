package main

import (
	_ "cloud.google.com/go/firestore"
	_ "cloud.google.com/go/pubsub/v2"
	_ "cloud.google.com/go/pubsub/v2/pstest"
	_ "github.com/coreos/go-oidc/v3/oidc"
	_ "github.com/gruntwork-io/terratest/modules/http-helper"
	_ "github.com/gruntwork-io/terratest/modules/logger"
	_ "github.com/gruntwork-io/terratest/modules/retry"
	_ "github.com/gruntwork-io/terratest/modules/shell"
	_ "github.com/gruntwork-io/terratest/modules/test-structure"
	_ "github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/open-policy-agent/opa/v1/rego"
	_ "github.com/open-policy-agent/opa/v1/tester"
	_ "github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/cloudrunv2"
	_ "github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/firestore"
	_ "github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/logging"
	_ "github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/monitoring"
	_ "github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/projects"
	_ "github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/pubsub"
	_ "github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/serviceaccount"
	_ "github.com/pulumi/pulumi/sdk/v3/go/auto"
	_ "github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	_ "github.com/spf13/cobra"
	_ "go.etcd.io/bbolt"
	_ "google.golang.org/api/idtoken"
)

func main() {}
