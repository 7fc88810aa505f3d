package plan

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
)

// Fixtures end in .txt so that `opa test policies/` does not load them as policy data.
func fixture(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestParseKeepsTheDocument(t *testing.T) {
	data := fixture(t, "preview_show_sames.json.txt")
	p, err := Parse(data, "preview.json")
	if err != nil {
		t.Fatal(err)
	}
	want, err := ast.ValueFromReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if p.Document.Compare(want) != 0 {
		t.Fatal("the decoded document differs from OPA's own decoding of the file")
	}
	if p.File != "preview.json" {
		t.Errorf("file = %q", p.File)
	}
}

func TestParseRejectsWhatIsNotAJSONObject(t *testing.T) {
	for _, tt := range []struct{ name, data, want string }{
		{"empty", "  \n", "empty input"},
		{"yaml", "apiVersion: v1\nkind: ConfigMap\n", "not a JSON object"},
		{"array", `[{"steps": []}]`, "not a JSON object"},
		{"truncated", `{"steps":[{"op":"create"`, "invalid JSON"},
		{"trailing data", `{"steps": []} {"steps": []}`, "data after the document"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.data), "x.json")
			if !errors.Is(err, ErrUnrecognised) || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "x.json: ") {
				t.Fatalf("Parse = %v, want ErrUnrecognised naming the file and %q", err, tt.want)
			}
		})
	}
}

// TestParseNamesTerraformOutputs: Terraform's outputs other than a JSON plan — the binary
// plan file and the log `terraform plan -json` streams (both made by terraform 1.5 from a
// terraform_data resource), the log cut after any of its lines, given by name or on
// standard input — are named, with the command that makes the document the rules read.
func TestParseNamesTerraformOutputs(t *testing.T) {
	log := fixture(t, "terraform_plan_log.jsonl.txt")
	type input struct{ name, data, file, want string }
	cases := []input{}
	for _, file := range []string{"plan.tfplan", "stdin"} {
		want := "terraform show -json " + file
		if file == "stdin" {
			want = "terraform show -json PLANFILE"
		}
		cases = append(cases, input{"binary plan " + file, string(fixture(t, "terraform_plan.tfplan")), file, "binary plan file (terraform plan -out)"},
			input{"binary plan command " + file, string(fixture(t, "terraform_plan.tfplan")), file, want})
	}
	lines := bytes.SplitAfter(bytes.TrimSpace(log), []byte("\n"))
	if len(lines) < 3 {
		t.Fatalf("the log fixture has %d lines", len(lines))
	}
	for n := 1; n <= len(lines); n++ {
		cases = append(cases, input{"log of " + strconv.Itoa(n) + " lines", string(bytes.Join(lines[:n], nil)), "plan.json",
			"this is the log `terraform plan -json` streams (JSON lines, one UI message each, first \"version\"), not a plan: save the plan with `terraform plan -out=plan.tfplan`, then check `terraform show -json plan.tfplan > plan.json`"})
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.data), tt.file)
			if !errors.Is(err, ErrUnrecognised) || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), tt.file+": ") {
				t.Fatalf("Parse = %v, want ErrUnrecognised naming %s and %q", err, tt.file, tt.want)
			}
		})
	}
	// A plan's JSON is no log: its first line is the whole document or an opening brace.
	if _, err := Parse(fixture(t, "terraform_plan.json.txt"), "plan.json"); err != nil {
		t.Fatalf("the terraform show -json plan: %v", err)
	}
}

func TestFromDocument(t *testing.T) {
	p, err := FromDocument(map[string]any{"version": 3, "deployment": map[string]any{"resources": []any{}}}, "analyzer")
	if err != nil {
		t.Fatal(err)
	}
	if p.Document.(ast.Object).Get(ast.StringTerm("version")).Value.Compare(ast.Number("3")) != 0 {
		t.Errorf("document = %v", p.Document)
	}
	if _, err := FromDocument([]any{}, "x"); !errors.Is(err, ErrUnrecognised) {
		t.Errorf("an array document: %v", err)
	}
	if _, err := FromDocument(map[string]any{"f": func() {}}, "x"); err == nil {
		t.Error("a document that is not JSON-shaped was accepted")
	}
}

// TestParseLocatesResources: every resource's URN (Terraform: address) is located at a
// line that names it.
func TestParseLocatesResources(t *testing.T) {
	for _, name := range []string{"preview_show_sames.json.txt", "terraform_plan.json.txt", "stack_export.json.txt"} {
		data := fixture(t, name)
		p, err := Parse(data, name)
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.Split(data, []byte{'\n'})
		if len(p.Locations) < 10 {
			t.Fatalf("%s: %d locations", name, len(p.Locations))
		}
		for key, loc := range p.Locations {
			if loc.File != name || loc.Line < 1 || loc.Line > len(lines) || !bytes.Contains(lines[loc.Line-1], []byte(strconv.Quote(key))) {
				t.Errorf("%s: %s located at %+v, which does not name it", name, key, loc)
			}
		}
	}
}

func TestLocationsFirstMention(t *testing.T) {
	doc := "{\"steps\": [\n{\"urn\": \"a\\u0062\"},\n{\"urn\": \"ab\"},\n{\"urn\" : \"c\\\"d\"}, {\"x\": \"\\\"urn\\\": \\\"e\\\"\"},\n{\"address\":\"e\"}]}"
	got := Locations([]byte(doc), "f.json")
	want := map[string]Location{"ab": {"f.json", 2}, `c"d`: {"f.json", 4}, "e": {"f.json", 5}}
	if len(got) != len(want) {
		t.Fatalf("Locations = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("Locations[%q] = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
}
