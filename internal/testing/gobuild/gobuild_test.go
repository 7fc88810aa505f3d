package gobuild

import (
	"debug/elf"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestBuildLinksWithoutSymbolsOrDWARF builds a command as the tests' commands are built:
// it runs, and its file has neither a symbol table nor DWARF sections (LinkFlags took
// effect), which is what makes these links cheaper.
func TestBuildLinksWithoutSymbolsOrDWARF(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads the ELF sections")
	}
	out := t.TempDir()
	if err := Build(t.Context(), "testdata", out, "./hello"); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(out, "hello")
	got, err := exec.Command(bin).Output()
	if err != nil || string(got) != "hello\n" {
		t.Fatalf("%s: %q, %v", bin, got, err)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, s := range f.Sections {
		if s.Name == ".symtab" || strings.HasPrefix(s.Name, ".debug_") || strings.HasPrefix(s.Name, ".zdebug_") {
			t.Errorf("%s has section %s: built without %q", bin, s.Name, LinkFlags)
		}
	}
}

// TestBuildNamesThePackageThatFails: a failed build's error holds go build's output.
func TestBuildNamesThePackageThatFails(t *testing.T) {
	err := Build(t.Context(), "testdata", t.TempDir(), "./missing")
	if err == nil || !strings.Contains(err.Error(), "./missing") {
		t.Fatalf("Build of a missing package: %v, want an error naming it", err)
	}
}
