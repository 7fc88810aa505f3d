package pgtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFindBin(t *testing.T) {
	empty, full := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "initdb"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if d, err := findBin([]string{"", empty, full}); err != nil || d != full {
		t.Errorf("findBin = %q, %v; want %q", d, err, full)
	}
	_, err := findBin([]string{empty})
	if err == nil || !strings.Contains(err.Error(), "apt-get install postgresql-15") || !strings.Contains(err.Error(), BinEnv) {
		t.Errorf("missing binaries: err = %v; want a message naming the package and %s", err, BinEnv)
	}
}
