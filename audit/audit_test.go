package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/audit/cai"
	"github.com/eventpipe/eventpipe/policies/check"
)

// TestRunCloudAssetInventory audits generated exports end to end: every pipeline without
// a dead-letter policy (one in ten) is one deny in the report, the run fails with a
// *check.FailedError counting them, each finding names who manages the resource, and the
// model and the summaries are written.
func TestRunCloudAssetInventory(t *testing.T) {
	const projects, pipelines = 2, 20
	resources, iam := caiEstate(t, projects, pipelines)
	dir := t.TempDir()
	md, html, modelFile := filepath.Join(dir, "s.md"), filepath.Join(dir, "s.html"), filepath.Join(dir, "model.json")
	var out, log bytes.Buffer
	err := Run(context.Background(), &out, &log, Options{
		Check:     check.Options{Outputs: []string{"json"}},
		CAI:       cai.Files{Resources: []string{resources}, IAM: []string{iam}},
		Summaries: []string{md, html}, ModelOut: modelFile,
	})
	var failed *check.FailedError
	if !errors.As(err, &failed) || failed.Command != "audit" {
		t.Fatalf("Run: %v, want a failing audit", err)
	}
	var rep struct {
		Findings []struct {
			RuleID string `json:"ruleId"`
			Level  string `json:"level"`
			URN    string `json:"urn"`
			Note   string `json:"note"`
		} `json:"findings"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, out.String())
	}
	// The pipelines without a dead-letter policy: events-000 and events-010 of each project.
	broken := map[string]int{}
	for _, f := range rep.Findings {
		if !strings.Contains(f.Note, "managed by Terraform") {
			t.Errorf("finding %s does not name its owner: %q", f.RuleID, f.Note)
		}
		if f.Level != "deny" {
			continue
		}
		i := strings.Index(f.URN, "events-")
		if i < 0 || !(strings.HasPrefix(f.URN[i:], "events-000") || strings.HasPrefix(f.URN[i:], "events-010")) {
			t.Errorf("deny %s on %s, a pipeline with a dead-letter policy", f.RuleID, f.URN)
			continue
		}
		broken[f.URN[:i+len("events-000")]]++
	}
	if want := projects * pipelines / 10; len(broken) != want {
		t.Errorf("denies on %d pipelines %v; want %d (one in ten lacks a DLQ)", len(broken), broken, want)
	}
	if total := len(rep.Findings); failed.Denies == 0 || failed.Denies > total {
		t.Errorf("the error counts %d denies of %d findings", failed.Denies, total)
	}
	for _, path := range []string{md, html, modelFile} {
		if data, err := os.ReadFile(path); err != nil || len(data) == 0 {
			t.Errorf("%s not written: %v", path, err)
		}
	}
	if !strings.Contains(log.String(), `"msg":"audit finished"`) {
		t.Errorf("no verdict logged: %s", log.String())
	}
}
