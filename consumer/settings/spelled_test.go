package settings

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// moduleRoot is the repository's root, seen from this package's directory.
const moduleRoot = "../.."

// variableName finds the names of variables with the consumer's prefix in a text.
var variableName = regexp.MustCompile(Prefix + `[A-Z0-9_]*`)

// TestNamesStartWithThePrefix: every variable of the consumer's own carries Prefix, so
// the names it reads can be told from the platform's (PORT, GOMEMLIMIT) and the handler
// may be refused a variable of its own with it (spec).
func TestNamesStartWithThePrefix(t *testing.T) {
	for _, v := range Vars() {
		if own := strings.HasPrefix(v.Name, Prefix); own == (v.Name == Port || v.Name == MemoryLimit) {
			t.Errorf("%s: starts with %s: %v", v.Name, Prefix, own)
		}
	}
}

// TestNoVariableSpelledOutsideSettings: the consumer's variables are spelled here only.
// Every other Go file of the module but tests and generated files (product code and the
// test scaffolding of internal/testing alike) names them by this package's constants, so that renaming one
// or adding one changes one place. A string holding Prefix elsewhere is allowed only as
// the whole value of a constant naming a variable of another program, such as a test
// tool's own (pgtest.BinEnv): its one home.
func TestNoVariableSpelledOutsideSettings(t *testing.T) {
	consumer := map[string]bool{}
	for _, v := range Vars() {
		consumer[v.Name] = true
	}
	var found []string
	err := filepath.WalkDir(moduleRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == moduleRoot {
				return nil
			}
			rel, _ := filepath.Rel(moduleRoot, path)
			name := d.Name()
			if strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || filepath.ToSlash(rel) == "consumer/settings" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // another module
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			spelled, err := spelledIn(path, consumer)
			if err != nil {
				return err
			}
			found = append(found, spelled...)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Error(f)
	}
}

// spelledIn lists the string literals of the Go file at path that spell a variable of
// the consumer (a name consumer holds, or Prefix alone), or a name with Prefix other
// than as the whole value of a constant.
func spelledIn(path string, consumer map[string]bool) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution|parser.ParseComments)
	if err != nil {
		return nil, err
	}
	if ast.IsGenerated(f) {
		return nil, nil // its source is held instead (spec/annotations.go: the doc comments)
	}
	constant := map[*ast.BasicLit]bool{}
	for _, decl := range f.Decls {
		if gd, ok := decl.(*ast.GenDecl); ok && gd.Tok == token.CONST {
			for _, spec := range gd.Specs {
				for _, v := range spec.(*ast.ValueSpec).Values {
					if lit, ok := v.(*ast.BasicLit); ok {
						constant[lit] = true
					}
				}
			}
		}
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		text, err := strconv.Unquote(lit.Value)
		if err != nil || !strings.Contains(text, Prefix) {
			return true
		}
		at := fset.Position(lit.Pos())
		at.Filename, _ = filepath.Rel(moduleRoot, at.Filename)
		for _, name := range variableName.FindAllString(text, -1) {
			switch {
			case name == Prefix:
				out = append(out, fmt.Sprintf("%s: %q spells the consumer's prefix: use settings.Prefix", at, text))
			case consumer[name]:
				out = append(out, fmt.Sprintf("%s: %q spells the consumer's variable %s: use its constant in consumer/settings", at, text, name))
			case !constant[lit] || text != name:
				out = append(out, fmt.Sprintf("%s: %q spells the variable %s outside the constant that defines it: define it once as a constant and use that", at, text, name))
			default:
				continue
			}
			break
		}
		return true
	})
	return out, nil
}
