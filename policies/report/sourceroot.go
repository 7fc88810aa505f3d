package report

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// RepositoryRoot returns the root of the git work tree holding dir (the nearest folder at
// or above it with a .git entry, a directory or a worktree's file), or dir itself, made
// absolute, when it is in none. GitHub resolves the paths of code scanning results and
// annotations against the repository root.
func RepositoryRoot(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("finding the repository root of %s: %w", dir, err)
	}
	for d := abs; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return abs, nil
		}
	}
}

// sourceRoot is r.SourceRoot made absolute, or the repository root of the working
// directory when it is empty.
func (r *Report) sourceRoot() (string, error) {
	if r.SourceRoot != "" {
		abs, err := filepath.Abs(r.SourceRoot)
		if err != nil {
			return "", fmt.Errorf("source root %s: %w", r.SourceRoot, err)
		}
		return abs, nil
	}
	return RepositoryRoot(".")
}

// underRoot returns file (absolute, or relative to the working directory) relative to
// root with forward slashes, symbolic links resolved as code scanning requires, and
// whether it is a file inside root at all (a plan read from standard input is located in
// "stdin", which is not).
func underRoot(root, file string) (string, bool) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return "", false
	}
	if _, err := os.Stat(abs); err != nil {
		return "", false
	}
	rel, err := filepath.Rel(resolved(root), resolved(abs))
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// resolved is path with symbolic links resolved, or path itself when that fails.
func resolved(path string) string {
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	return path
}
