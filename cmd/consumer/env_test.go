package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/consumer/server"
	"github.com/eventpipe/eventpipe/consumer/settings"
	"github.com/eventpipe/eventpipe/internal/spelling"
)

// readNames is every variable server.ConfigFromEnv and run read, as run records them.
func readNames(t *testing.T) map[string]bool {
	t.Helper()
	read := map[string]bool{}
	lookup := recordingLookup(read, func(string) (string, bool) { return "", false })
	if _, err := server.ConfigFromEnv(lookup); err != nil {
		t.Fatal(err)
	}
	lookup(failpointEnv)
	return read
}

// TestUnreadVariables: of an environment, exactly the EVENTPIPE_ variables nothing read
// are reported, once each and sorted, each with the read variable spelling.Closest finds
// for it; other variables and the ones read never are. The environments are built from
// every read name and one-edit misspellings of each.
func TestUnreadVariables(t *testing.T) {
	read := readNames(t)
	var known []string
	for k := range read {
		if strings.HasPrefix(k, settings.Prefix) {
			known = append(known, k)
		}
	}
	slices.Sort(known)
	for _, name := range known {
		for _, typo := range []string{name[:len(name)-1], name + "S", strings.Replace(name, "_", "-", 1), strings.ToLower(name)} {
			if read[typo] {
				continue
			}
			environ := []string{"PATH=/bin", name + "=x", typo + "=y", typo + "=z", "HOME=/root", "EVENTPIPEX=1"}
			got := unreadVariables(environ, read)
			if !strings.HasPrefix(typo, settings.Prefix) {
				if len(got) != 0 {
					t.Errorf("%s: reported %v, but it is not an %s variable", typo, got, settings.Prefix)
				}
				continue
			}
			meant, _ := spelling.Closest(typo, known)
			if len(got) != 1 || got[0].name != typo || got[0].meant != meant || meant == "" {
				t.Errorf("environment %v: %+v; want only %s (did you mean %s)", environ, got, typo, meant)
			}
		}
	}
	// Nothing but what is read: no report.
	var environ []string
	for _, k := range known {
		environ = append(environ, k+"=v")
	}
	if got := unreadVariables(environ, read); len(got) != 0 {
		t.Errorf("variables that are read reported unread: %+v", got)
	}
	// Far from every name: reported with no guess.
	if got := unreadVariables([]string{"EVENTPIPE_DATABASE_URL=postgres://x"}, read); len(got) != 1 || got[0].meant != "" {
		t.Errorf("EVENTPIPE_DATABASE_URL: %+v; want it reported with no guess", got)
	}
}

// TestDocumentedVariablesAreRead: every EVENTPIPE_ variable of docs/consumer.md's
// configuration table is one the consumer reads, so none of them is ever reported unread.
func TestDocumentedVariablesAreRead(t *testing.T) {
	read := readNames(t)
	doc, err := os.ReadFile("../../docs/consumer.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), "## Configuration (environment only)")
	section, _, _ = strings.Cut(section, "\n## ")
	var rows strings.Builder
	for _, l := range strings.Split(section, "\n") {
		if strings.HasPrefix(l, "| `") {
			rows.WriteString(l + "\n")
		}
	}
	names := regexp.MustCompile(`EVENTPIPE_[A-Z_]*[A-Z]`).FindAllString(rows.String(), -1)
	if len(names) < 20 {
		t.Fatalf("found only %d EVENTPIPE_ names in docs/consumer.md", len(names))
	}
	for _, n := range names {
		if !read[n] {
			t.Errorf("docs/consumer.md names %s, which the consumer does not read", n)
		}
	}
}

// TestMisspeltVariableIsNamed runs the binary with a misspelt store variable: it starts
// (the variable may be a newer component's), and logs one WARNING naming the variable
// and the one it most likely means; a start without one logs no such line.
func TestMisspeltVariableIsNamed(t *testing.T) {
	p := startWith(t, "EVENTPIPE_STOR=mem://")
	p.Stop(t)
	var warned []map[string]any
	for _, l := range jsonLines(t, p) {
		if l["message"] == unreadMessage {
			warned = append(warned, l)
		}
	}
	if len(warned) != 1 || warned[0]["severity"] != "WARNING" || warned[0]["variable"] != "EVENTPIPE_STOR" ||
		!strings.Contains(warned[0]["fix"].(string), "EVENTPIPE_STORE") {
		t.Fatalf("lines %v; want one WARNING naming EVENTPIPE_STOR and EVENTPIPE_STORE", warned)
	}
	clean := startBinary(t)
	clean.Stop(t)
	for _, l := range jsonLines(t, clean) {
		if l["message"] == unreadMessage {
			t.Errorf("a start with only read variables logged %v", l)
		}
	}
}
