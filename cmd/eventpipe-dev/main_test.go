package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/internal/release"
	"github.com/eventpipe/eventpipe/internal/testing/devtest"
)

// TestLinksNeitherTheProgramNorOPA: the README's run command must compile in minutes on
// a new machine, so this binary links none of what the local pipeline does not use: the
// Pulumi program (components, render, alerts' components), the Pulumi GCP SDK's resource
// packages, the Pulumi engine and Automation API, OPA, or the check and audit pipelines.
func TestLinksNeitherTheProgramNorOPA(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	forbidden := []string{
		"github.com/eventpipe/eventpipe/components", "github.com/eventpipe/eventpipe/render", "github.com/eventpipe/eventpipe/policies",
		"github.com/eventpipe/eventpipe/audit", "github.com/eventpipe/eventpipe/provider", "github.com/open-policy-agent/",
		"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/pubsub", "github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/cloudrunv2",
		"github.com/pulumi/pulumi/sdk/v3/go/auto", "github.com/pulumi/pulumi/pkg/v3/engine",
	}
	n := 0
	for _, pkg := range strings.Fields(string(out)) {
		n++
		for _, f := range forbidden {
			if strings.HasPrefix(pkg, f) {
				t.Errorf("links %s", pkg)
			}
		}
	}
	if n < 100 {
		t.Fatalf("go list -deps listed %d packages", n)
	}
}

// TestRootIsDev: the binary's root command is `eventpipe dev` (its flags) with replay and
// version beside it.
func TestRootIsDev(t *testing.T) {
	out, _, err := devtest.Execute(t, newRootCmd(), "version")
	if err != nil || out != "eventpipe-dev "+release.ModuleVersion()+"\n" {
		t.Errorf("version: %q, %v", out, err)
	}
	root := newRootCmd()
	for _, flag := range []string{"stack", "stack-file", "serve", "samples", "routes", "handler", "backoff-scale"} {
		if root.Flags().Lookup(flag) == nil {
			t.Errorf("no --%s", flag)
		}
	}
	if sub, _, err := root.Find([]string{"replay"}); err != nil || sub.Name() != "replay" {
		t.Errorf("no replay command: %v", err)
	}
	if _, _, err := devtest.Execute(t, newRootCmd(), "--stack", "nope"); err == nil || !strings.Contains(err.Error(), `no config for stack "nope"`) {
		t.Errorf("--stack nope: %v", err)
	}
}
