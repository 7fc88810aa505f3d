package tffixtures

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// StampFile, in the fixtures folder, records the CLI versions the committed plans were
// made with and the digest of everything those plans were made from (Inputs). It is the
// one home of the pinned Terraform and OpenTofu versions: `make deps` reads them from it
// and builds the CLIs only when the digest no longer matches, that is when a plan would
// have to be made again. scripts/terraform-fixtures.sh rewrites it after regenerating
// every plan.
const StampFile = "inputs.txt"

// Stamp is the content of StampFile.
type Stamp struct {
	// Versions maps a CLI (one of CLIs) to the version its plans were made with.
	Versions map[string]string
	// Digest is InputsDigest of the repository with these Versions.
	Digest string
}

// The folders and files, relative to the repository root, whose content decides what the
// CLIs plan: the fixtures' configurations, the stand-in provider, the normaliser and the
// script that drives them. The committed plans, the stamp and the expected verdicts
// (all but their clis: line) are outputs or judgements, not inputs.
var inputRoots = []string{
	"policies/testdata/terraform",
	"internal/testing/tfprovider",
	"internal/testing/tffixtures/normalise.go",
	"internal/testing/tffixtures/cmd/tfplan-normalise",
	"scripts/terraform-fixtures.sh",
}

// InputsDigest is the SHA-256, in hex, of the fixture inputs under repo (see inputRoots)
// together with the CLI versions: any change to a configuration, the stand-in provider,
// the normaliser, the script or a pinned version changes it.
func InputsDigest(repo string, versions map[string]string) (string, error) {
	h := sha256.New()
	for _, cli := range CLIs {
		fmt.Fprintf(h, "%s %s\n", cli, versions[cli])
	}
	for _, root := range inputRoots {
		err := filepath.WalkDir(filepath.Join(repo, root), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, err := filepath.Rel(repo, path)
			if err != nil {
				return err
			}
			name := d.Name()
			if strings.HasSuffix(name, PlanSuffix) || name == StampFile {
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if name == ExpectedFile {
				data = clisLine(data)
			}
			// WalkDir visits in lexical order, so the digest does not depend on the file system.
			fmt.Fprintf(h, "%s %d\n", filepath.ToSlash(rel), len(data))
			h.Write(data)
			return nil
		})
		if err != nil {
			return "", fmt.Errorf("digest of the fixture inputs: %w", err)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// clisLine keeps the one line of an ExpectedFile that decides which CLIs plan a case.
func clisLine(expected []byte) []byte {
	for line := range bytes.Lines(expected) {
		if bytes.HasPrefix(line, []byte("clis:")) {
			return line
		}
	}
	return nil
}

// ReadStamp reads the StampFile of the fixtures folder dir.
func ReadStamp(dir string) (Stamp, error) {
	path := filepath.Join(dir, StampFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return Stamp{}, fmt.Errorf("reading the fixture stamp: %w", err)
	}
	s := Stamp{Versions: map[string]string{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, ok := strings.Cut(line, " ")
		switch {
		case !ok:
			return Stamp{}, fmt.Errorf("%s:%d: want \"NAME VALUE\", got %q", path, n, line)
		case key == "digest":
			s.Digest = value
		case slices.Contains(CLIs, key):
			s.Versions[key] = value
		default:
			return Stamp{}, fmt.Errorf("%s:%d: unknown key %q (want digest or one of %v)", path, n, key, CLIs)
		}
	}
	for _, cli := range CLIs {
		if s.Versions[cli] == "" {
			return Stamp{}, fmt.Errorf("%s: no %s version", path, cli)
		}
	}
	if s.Digest == "" {
		return Stamp{}, fmt.Errorf("%s: no digest", path)
	}
	return s, nil
}

// WriteStamp writes s as the StampFile of the fixtures folder dir.
func WriteStamp(dir string, s Stamp) error {
	var b strings.Builder
	b.WriteString("# Written by scripts/terraform-fixtures.sh after it regenerated every plan: the CLI\n" +
		"# versions the plans were made with (make deps builds these) and the digest of their inputs.\n")
	for _, cli := range CLIs {
		fmt.Fprintf(&b, "%s %s\n", cli, s.Versions[cli])
	}
	fmt.Fprintf(&b, "digest %s\n", s.Digest)
	if err := os.WriteFile(filepath.Join(dir, StampFile), []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("writing the fixture stamp: %w", err)
	}
	return nil
}
