// Package docblock reads the fenced code blocks of the repository's Markdown documents, so
// tests run the examples users copy rather than copies of them.
package docblock

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Read returns the document at path, relative to the repository's root.
func Read(t testing.TB, path string) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(Root(t), path))
	if err != nil {
		t.Fatalf("docblock: %v", err)
	}
	return string(doc)
}

// Root is the repository's root, found from this file's place in it
// (internal/testing/docblock), so it does not depend on the working directory.
func Root(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("docblock: cannot tell where the repository is")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// After returns the body of the first fenced block that opens after the first occurrence
// of marker in the document at path (a heading, an `<!-- example: name -->` comment or a
// sentence); with lang set, the first such block whose info string is lang. The body is
// the lines between the fences, each ending in a newline.
func After(t testing.TB, path, marker, lang string) string {
	t.Helper()
	_, rest, ok := strings.Cut(Read(t, path), marker)
	if !ok {
		t.Fatalf("docblock: %s has no %q", path, marker)
	}
	for {
		open := strings.Index(rest, "```")
		if open < 0 {
			t.Fatalf("docblock: %s has no %s block after %q", path, orAny(lang), marker)
		}
		info, body, ok := strings.Cut(rest[open+3:], "\n")
		if !ok {
			t.Fatalf("docblock: %s: the block after %q is not closed", path, marker)
		}
		block, after, ok := cutFence(body)
		if !ok {
			t.Fatalf("docblock: %s: the block after %q is not closed", path, marker)
		}
		if lang == "" || strings.TrimSpace(info) == lang {
			return block
		}
		rest = after
	}
}

// Example returns the block after `<!-- example: name -->` in the document at path: the
// README names the examples tests run that way.
func Example(t testing.TB, path, name string) string {
	t.Helper()
	return After(t, path, "<!-- example: "+name+" -->", "")
}

// Starting returns the fenced block of the document at path that has a line equal to
// first, from that line to the closing fence.
func Starting(t testing.TB, path, first string) string {
	t.Helper()
	doc := Read(t, path)
	i := strings.Index(doc, "\n"+first+"\n")
	if i < 0 {
		t.Fatalf("docblock: %s has no block line %q", path, first)
	}
	block, _, ok := cutFence(doc[i+1:])
	if !ok {
		t.Fatalf("docblock: %s: the block with %q is not closed", path, first)
	}
	return block
}

// cutFence splits s at the next line that is a closing fence: the lines before it (each
// ending in a newline) and what follows the fence.
func cutFence(s string) (block, after string, ok bool) {
	if strings.HasPrefix(s, "```") {
		return "", s[3:], true
	}
	i := strings.Index(s, "\n```")
	if i < 0 {
		return "", "", false
	}
	return s[:i+1], s[i+4:], true
}

func orAny(lang string) string {
	if lang == "" {
		return "fenced"
	}
	return lang
}
