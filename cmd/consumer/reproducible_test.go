package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestConsumerBuildIsReproducible runs the build the Dockerfile and `make build-consumer`
// run (the one line they share) in this checkout and in a copy of its files at another
// path, and requires the same bytes: -trimpath, -buildvcs=false and an empty build id make
// the binary a function of the source and the toolchain only, which is what lets a
// reviewer rebuild the image's binary and compare (from a git checkout or a tarball alike). (A Docker engine cannot run here; the
// rest of the image's reproducibility, pinned bases and SOURCE_DATE_EPOCH, is the
// Dockerfile's.)
func TestConsumerBuildIsReproducible(t *testing.T) {
	if testing.Short() {
		t.Skip("links the consumer twice")
	}
	root := repoRoot(t)
	makeOut, err := exec.Command("make", "-s", "-n", "-C", root, "build-consumer", "GO=go").Output()
	if err != nil {
		t.Fatalf("make -n build-consumer: %v", err)
	}
	var line string
	for _, l := range strings.Split(string(makeOut), "\n") {
		if strings.Contains(l, "go build") {
			line = l
		}
	}
	if !strings.Contains(line, " -o bin/consumer ") {
		t.Fatalf("make build-consumer does not write bin/consumer: %q", line)
	}
	// A copy of the module's files (tracked and new, as in this checkout) at another path.
	files, err := exec.Command("git", "-C", root, "ls-files", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	elsewhere := filepath.Join(t.TempDir(), "another", "checkout")
	for _, f := range strings.Fields(string(files)) {
		if !strings.HasSuffix(f, ".go") && f != "go.mod" && f != "go.sum" && !strings.HasSuffix(f, ".json") && !strings.HasSuffix(f, ".tmpl") {
			continue // what a Go build reads
		}
		data, err := os.ReadFile(filepath.Join(root, f))
		if os.IsNotExist(err) {
			continue // deleted in this checkout
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(elsewhere, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(elsewhere, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var sums []string
	for i, dir := range []string{root, elsewhere} {
		out := filepath.Join(t.TempDir(), "consumer")
		cmd := exec.Command("sh", "-c", strings.Replace(line, " -o bin/consumer ", " -o "+out+" ", 1))
		cmd.Dir = dir
		// GOFLAGS as a user's machine has it: a -buildvcs=false there would hide a build
		// that stamps the checkout's commit (this one is a git checkout, the copy is not).
		cmd.Env = append(os.Environ(), "GOFLAGS=")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("build %d in %s: %v\n%s", i+1, dir, err, stderr.String())
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		sums = append(sums, hex.EncodeToString(sum[:]))
	}
	if sums[0] != sums[1] {
		t.Errorf("the consumer built from %s and from %s differs: %s, %s", root, elsewhere, sums[0], sums[1])
	}
}
