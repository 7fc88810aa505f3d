package docblock

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// linkPattern is a Markdown inline link's target: [text](target).
var linkPattern = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// headingPattern is a Markdown heading line.
var headingPattern = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *$`)

// anchor is GitHub's anchor of a heading: lowercased, everything but letters, digits,
// hyphens and underscores dropped, spaces turned into hyphens.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestAnchor holds anchor to the anchors GitHub gives the repository's own headings.
func TestAnchor(t *testing.T) {
	for heading, want := range map[string]string{
		"Prerequisites: APIs, roles, network":           "prerequisites-apis-roles-network",
		"Google Cloud credentials and the gcp provider": "google-cloud-credentials-and-the-gcp-provider",
		"`eventpipe check [FILE|-] [--stack ENV]`":      "eventpipe-check-file----stack-env",
		"On a worker pool (pull-only pipelines)":        "on-a-worker-pool-pull-only-pipelines",
		"Locally: `eventpipe dev --handler`":            "locally-eventpipe-dev---handler",
		"From TypeScript, Python or YAML":               "from-typescript-python-or-yaml",
		"Memory under maximum-size messages":            "memory-under-maximum-size-messages",
		"`…<name>.consumer.vpcAccess`":                  "nameconsumervpcaccess",
		"Consumer: hot aggregates":                      "consumer-hot-aggregates",
		"Bounds and the check":                          "bounds-and-the-check",
		"Running the rules under pulumi preview":        "running-the-rules-under-pulumi-preview",
		"Limits under load":                             "limits-under-load",
	} {
		if got := anchor(heading); got != want {
			t.Errorf("anchor(%q) = %q, want %q", heading, got, want)
		}
	}
}

// TestDocLinksResolve: every relative link of README.md and docs/*.md names a file of the
// repository and, for a Markdown file, one of its headings, so a reader following the
// README never lands on a 404 or the top of the wrong page.
func TestDocLinksResolve(t *testing.T) {
	root := Root(t)
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs: %v", err)
	}
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		a := map[string]bool{}
		if text, err := os.ReadFile(path); err == nil {
			for _, m := range headingPattern.FindAllStringSubmatch(stripFences(string(text)), -1) {
				a[anchor(m[1])] = true
			}
		}
		anchors[path] = a
		return a
	}
	links := 0
	for _, doc := range append(docs, filepath.Join(root, "README.md")) {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, doc)
		for _, m := range linkPattern.FindAllStringSubmatch(stripFences(string(text)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			links++
			file, frag, _ := strings.Cut(target, "#")
			path := doc
			if file != "" {
				path = filepath.Join(filepath.Dir(doc), filepath.FromSlash(file))
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s: link %q: no file %s", rel, target, path)
				continue
			}
			if frag != "" && strings.HasSuffix(path, ".md") && !anchorsOf(path)[frag] {
				t.Errorf("%s: link %q: %s has no heading with anchor #%s", rel, target, filepath.Base(path), frag)
			}
		}
	}
	if links < 50 {
		t.Fatalf("found only %d relative links in README.md and docs/*.md", links)
	}
}

// stripFences drops fenced code blocks, whose lines are neither headings nor links.
func stripFences(text string) string {
	var b strings.Builder
	in := false
	for _, line := range strings.SplitAfter(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			in = !in
			continue
		}
		if !in {
			b.WriteString(line)
		}
	}
	return b.String()
}
