package spec_test

import (
	"fmt"
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

// TestParseStackFileRefusesDuplicateKeys: a key written twice in one mapping, at any depth
// (every key line of stackYAML written twice in turn), is refused at the second one's
// file:line, naming the key, as the Pulumi CLI refuses the file; yaml.v3 kept the last.
func TestParseStackFileRefusesDuplicateKeys(t *testing.T) {
	lines := strings.Split(stackYAML, "\n")
	tried := 0
	for i, l := range lines {
		key, _, isKey := strings.Cut(strings.TrimSpace(l), ": ")
		if !isKey {
			key, isKey = strings.CutSuffix(strings.TrimSpace(l), ":")
		}
		if !isKey || strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		tried++
		doubled := append(append(append([]string{}, lines[:i]...), l), lines[i:]...)
		_, err := spec.ParseStackFile("Pulumi.dev.yaml", []byte(strings.Join(doubled, "\n")))
		want := fmt.Sprintf("stack config Pulumi.dev.yaml:%d: ", i+2)
		if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), fmt.Sprintf("key %q is already defined at line %d", key, i+1)) {
			t.Errorf("line %d (%s) written twice: %v, want %q… key %q", i+1, l, err, want, key)
		}
	}
	if tried < 15 {
		t.Fatalf("only %d key lines tried", tried)
	}
	// Two spellings of one config key are one key written twice.
	_, err := spec.ParseStackFile("Pulumi.dev.yaml", []byte("config:\n  project: a\n  eventpipe:project: b\n"))
	if err == nil || !strings.Contains(err.Error(), `Pulumi.dev.yaml:3: config key "eventpipe:project" names eventpipe:project, already set at line 2`) {
		t.Errorf("project and eventpipe:project: %v", err)
	}
}

// TestParseStackFileWantsConfigWrapper: settings written at the top level instead of
// under config: are refused at their line with the fix, whichever key comes first; the
// keys of a Pulumi stack file are accepted.
func TestParseStackFileWantsConfigWrapper(t *testing.T) {
	var flat []string
	for _, l := range strings.Split(stackYAML, "\n") {
		if l == "config:" {
			continue
		}
		flat = append(flat, strings.TrimPrefix(l, "  "))
	}
	_, err := spec.ParseStackFile("Pulumi.dev.yaml", []byte(strings.Join(flat, "\n")))
	if err == nil || !strings.Contains(err.Error(), "Pulumi.dev.yaml:2: gcp:project, project, eventpipe:projectNumber, eventpipe:store, eventpipe:pipelines at the top level") ||
		!strings.Contains(err.Error(), "put them under config:") {
		t.Fatalf("settings without config: %v", err)
	}
	// The namespace written as a mapping: its keys are eventpipe:KEY under config:.
	_, err = spec.ParseStackFile("Pulumi.dev.yaml", []byte("# dev\neventpipe:\n  project: acme-dev\n  pipelines: {}\n"))
	if err == nil || !strings.Contains(err.Error(), "Pulumi.dev.yaml:2: eventpipe at the top level") ||
		!strings.Contains(err.Error(), "put them under config:, each eventpipe key as eventpipe:KEY (config:\n  eventpipe:project: …)") {
		t.Fatalf("eventpipe: at the top level: %v", err)
	}
	ok := "secretsprovider: passphrase\nencryptionsalt: v1:abc\nencryptedkey: k\nenvironment: [acme/dev]\n" + stackYAML
	if _, err := spec.ParseStackFile("Pulumi.dev.yaml", []byte(ok)); err != nil {
		t.Fatalf("a stack file's own keys: %v", err)
	}
}
