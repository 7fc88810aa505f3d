package spec_test

import (
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/spec"
)

const stackYAML = `# test stack
config:
  gcp:project: acme-dev
  project: acme-dev
  eventpipe:projectNumber: 123456789012
  eventpipe:store:
    secure: v1:AAAABBBBCCCC
  eventpipe:pipelines:
    orders:
      consumer:
        image: r.example/consumer:1
        minInstances: 1
      subscriptions:
        main:
          delivery: push
          maxDeliveryAttempts: 2
        work:
          delivery: pull
`

func TestParseStackFile(t *testing.T) {
	f, err := spec.ParseStackFile("Pulumi.dev.yaml", []byte(stackYAML))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Source.Values["eventpipe:project"]; got != "acme-dev" {
		t.Errorf("un-namespaced key: eventpipe:project = %q", got)
	}
	if got := f.Source.Values["eventpipe:projectNumber"]; got != "123456789012" {
		t.Errorf("numeric scalar must reach the program as its text: %q", got)
	}
	if got := f.Source.Values["eventpipe:store"]; got != spec.OfflineSecret || !f.Source.Secrets["eventpipe:store"] {
		t.Errorf("secure value = %q secret=%v", got, f.Source.Secrets["eventpipe:store"])
	}
	if got := f.Source.Values["gcp:project"]; got != "acme-dev" {
		t.Errorf("other namespaces kept: %q", got)
	}
	if !strings.Contains(f.Source.Values["eventpipe:pipelines"], `"maxDeliveryAttempts":2`) {
		t.Errorf("structured value not JSON: %s", f.Source.Values["eventpipe:pipelines"])
	}
	locs := []struct {
		path string
		line int
	}{
		{"eventpipe:pipelines", 8},
		{"eventpipe:pipelines.orders", 9},
		{"eventpipe:pipelines.orders.subscriptions.main", 14},
		{"eventpipe:pipelines.orders.subscriptions.main.maxDeliveryAttempts", 16},
		{"eventpipe:pipelines.orders.subscriptions.main.retention", 14}, // unwritten: nearest ancestor
	}
	for _, l := range locs {
		loc, ok := f.Locate(l.path)
		if !ok || loc.Line != l.line || loc.File != "Pulumi.dev.yaml" {
			t.Errorf("Locate(%s) = %v %v, want line %d", l.path, loc, ok, l.line)
		}
	}
	_, err = f.Load("dev")
	errs, ok := err.(spec.Errors)
	if !ok || len(errs) != 1 {
		t.Fatalf("Load = %v, want the maxDeliveryAttempts error only", err)
	}
	if errs[0].Location.Line != 16 || !strings.HasPrefix(errs[0].Error(), "Pulumi.dev.yaml:16: pipeline \"orders\": ") {
		t.Errorf("error lacks its location: %q", errs[0].Error())
	}
}

func TestParseStackFileRejectsNonMapping(t *testing.T) {
	for _, doc := range []string{"- a\n- b\n", "config: [1, 2]\n", "config: {a: [\n"} {
		if _, err := spec.ParseStackFile("x.yaml", []byte(doc)); err == nil {
			t.Errorf("ParseStackFile(%q) succeeded", doc)
		}
	}
}

func TestSecureValueInsideStructuredKeyIsAnError(t *testing.T) {
	doc := strings.Replace(stackYAML, "        minInstances: 1\n", "        minInstances: 1\n        store:\n          secure: v1:AAAA\n", 1)
	doc = strings.Replace(doc, "          maxDeliveryAttempts: 2\n", "", 1)
	f, err := spec.ParseStackFile("Pulumi.dev.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Load("dev")
	errs, ok := err.(spec.Errors)
	if !ok || len(errs) != 1 || errs[0].Path != "eventpipe:pipelines" || !strings.Contains(errs[0].Fix, "pulumi config set --secret eventpipe:store") {
		t.Fatalf("err = %v, want one error pointing to eventpipe:store", err)
	}
	if strings.Contains(err.Error(), "AAAA") {
		t.Error("ciphertext echoed")
	}
}
