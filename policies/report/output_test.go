package report

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseOutputs(t *testing.T) {
	for _, tt := range []struct {
		specs   []string
		want    []Output
		wantErr string
	}{
		{specs: []string{"text"}, want: []Output{{Format: Text}}},
		{specs: []string{"github", "sarif=out/prod.sarif", "json=prod.json"}, want: []Output{{Format: GitHub}, {Format: SARIF, Path: "out/prod.sarif"}, {Format: JSON, Path: "prod.json"}}},
		{specs: []string{"yaml"}, wantErr: `"yaml": unknown format "yaml"`},
		{specs: []string{"xml=a.xml"}, wantErr: `unknown format "xml"`},
		{specs: []string{"sarif="}, wantErr: `"sarif=": no file after "="`},
		{specs: []string{"text", "json"}, wantErr: `standard output already gets "text"`},
		{specs: []string{"sarif=a", "json=a"}, wantErr: "a is already written"},
	} {
		got, err := ParseOutputs(tt.specs)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%v: err %v, want %q", tt.specs, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%v: %+v, %v; want %+v", tt.specs, got, err, tt.want)
		}
	}
}

// TestWriteOutputs writes one report in three formats at once: each destination gets
// exactly what Write gives for its format.
func TestWriteOutputs(t *testing.T) {
	dir := t.TempDir()
	outs, err := ParseOutputs([]string{"github", "sarif=" + filepath.Join(dir, "r.sarif"), "text=" + filepath.Join(dir, "r.txt")})
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	if err := WriteOutputs(&stdout, outs, sample(false)); err != nil {
		t.Fatal(err)
	}
	if want := render(t, GitHub, sample(false)); stdout.String() != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", stdout.String(), want)
	}
	for file, f := range map[string]Format{"r.sarif": SARIF, "r.txt": Text} {
		got, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		if want := render(t, f, sample(false)); string(got) != want {
			t.Errorf("%s differs from the %s report", file, f)
		}
	}
	// A file that cannot be created is an error naming it.
	bad, _ := ParseOutputs([]string{"json=" + filepath.Join(dir, "missing", "r.json")})
	if err := WriteOutputs(&stdout, bad, sample(false)); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("err = %v", err)
	}
}
