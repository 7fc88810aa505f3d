// Package srcpos is where a resource was declared in a Pulumi program's source, in the
// form Pulumi's engine records it: a resource state's "sourcePosition" and its
// "stackTrace" frames are "project:///PATH#LINE[,COLUMN]", PATH relative to the project
// root (the folder of Pulumi.yaml). The Go SDK sends the engine each registration's
// frames as file:///ABSOLUTE#LINE (pulumi sdk v3.200.0 go/pulumi/context.go,
// getSourcePositionForFrame and getStackTrace); the engine makes them project-relative
// (pkg v3.200.0 resource/deploy/source_eval.go, parseSourcePosition), and `pulumi
// preview --json` and `pulumi stack export` carry them (apitype.ResourceV3).
//
// The line a team wants is that of its own call, not of the library that registered
// the resource for it: Declaring picks, innermost first, the first frame inside the
// project, which is the team's call of a component even when the component's own code
// registered the resource.
package srcpos

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// Frame is one source position: a file and a 1-based line.
type Frame struct {
	File string
	Line int
}

// scheme is the scheme of the engine's project-relative positions.
const scheme = "project"

// Format is the engine's form of the position of line in rel, a slash-separated path
// relative to the project root: project:///orders/orders.go#42.
func Format(rel string, line int) string {
	u := url.URL{Scheme: scheme, Path: "/" + path.Clean(filepath.ToSlash(rel)), Fragment: strconv.Itoa(line)}
	return u.String()
}

// Parse reads a position in the engine's form: the path relative to the project root
// (slash-separated, possibly starting with ../ for a file outside the project) and the
// line. ok is false for anything else.
func Parse(pos string) (rel string, line int, ok bool) {
	u, err := url.Parse(pos)
	if err != nil || u.Scheme != scheme || !strings.HasPrefix(u.Path, "/") {
		return "", 0, false
	}
	lineText, _, _ := strings.Cut(u.Fragment, ",") // a column may follow
	line, err = strconv.Atoi(lineText)
	if err != nil || line < 1 {
		return "", 0, false
	}
	rel = path.Clean(strings.TrimPrefix(u.Path, "/"))
	if rel == "." || rel == "" {
		return "", 0, false
	}
	return rel, line, true
}

// InProject reports whether rel, a project-relative path as Parse returns it, is the
// team's own source: inside the project and not a vendored dependency.
func InProject(rel string) bool {
	return rel != ".." && !strings.HasPrefix(rel, "../") && !strings.HasPrefix(rel, "vendor/") && !strings.HasPrefix(rel, "/")
}

// FromURI reads a position as the Go SDK sends it to the engine: file:///ABSOLUTE with
// the line apart (pulumirpc.SourcePosition). ok is false for a frame without a file or
// line.
func FromURI(uri string, line int) (Frame, bool) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" || u.Path == "" || line < 1 {
		return Frame{}, false
	}
	return Frame{File: filepath.FromSlash(u.Path), Line: line}, true
}

// Declaring is the position, in the engine's form relative to root, of the innermost of
// frames (innermost first) that lies inside the project at root: the team's call that
// declared the resource. ok is false when no frame does (the resource was registered
// where no frame of the program is on the stack, such as inside an apply).
func Declaring(root string, frames []Frame) (pos string, ok bool) {
	for _, f := range frames {
		if !filepath.IsAbs(f.File) {
			continue // built with -trimpath: the engine refuses such positions too
		}
		rel, err := filepath.Rel(root, f.File)
		if err != nil {
			continue
		}
		if rel = filepath.ToSlash(rel); InProject(rel) {
			return Format(rel, f.Line), true
		}
	}
	return "", false
}

// Resolve is the file (joined to root, the project's folder) and line of pos, a position
// in the engine's form inside the project; ok is false for any other.
func Resolve(root, pos string) (file string, line int, ok bool) {
	rel, line, ok := Parse(pos)
	if !ok || !InProject(rel) {
		return "", 0, false
	}
	return filepath.Join(root, filepath.FromSlash(rel)), line, true
}

// String is f as file:line.
func (f Frame) String() string { return fmt.Sprintf("%s:%d", f.File, f.Line) }

// ErrNoProject is ProjectRoot's error when no folder holds a Pulumi.yaml.
var ErrNoProject = errors.New("no Pulumi.yaml")

// ProjectRoot is the project root the engine makes positions relative to: the nearest
// folder at or above dir (made absolute) that holds a Pulumi.yaml. It wraps ErrNoProject
// when there is none.
func ProjectRoot(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("project root of %s: %w", dir, err)
	}
	for d := abs; ; d = filepath.Dir(d) {
		_, err := os.Stat(filepath.Join(d, "Pulumi.yaml"))
		if err == nil {
			return d, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("project root of %s: %w", dir, err)
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("%w in %s or above", ErrNoProject, abs)
		}
	}
}

// Relative is path relative to the working directory, as test failures and reports name
// files; path itself when it cannot be.
func Relative(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	if rel, err := filepath.Rel(wd, abs); err == nil {
		return rel
	}
	return path
}
