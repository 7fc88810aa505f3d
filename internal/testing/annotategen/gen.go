// Package annotategen writes the Annotate methods of a package's argument
// and output types from their doc comments, so the descriptions a component
// provider shows are the ones Go users read, and checks that an Annotate
// method describes every field. Tests use it; nothing at run time does.
package annotategen

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/eventpipe/eventpipe/internal/annotate"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
)

// File is the name of the generated file in each package.
const File = "annotations.go"

// Generate returns the source of File for the package in dir: an Annotate
// method for every struct type with a field tagged `pulumi`, describing the
// type and each tagged field with its doc comment and setting the token
// index:NAME, where NAME is tokenName(type name).
func Generate(dir, pkg string, tokenName func(string) string) ([]byte, error) {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	type typeDoc struct {
		name, doc string
		fields    [][2]string // Go name, description
	}
	var types []typeDoc
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || filepath.Base(name) == File {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				doc := ts.Doc
				if doc == nil {
					doc = gd.Doc
				}
				// A type's description keeps its paragraphs and lists (schema
				// descriptions are markdown); a field's is one line.
				td := typeDoc{name: ts.Name.Name, doc: strings.TrimSpace(doc.Text())}
				for _, field := range st.Fields.List {
					if field.Tag == nil || len(field.Names) == 0 {
						continue
					}
					tag, _ := strconv.Unquote(field.Tag.Value)
					if _, ok := reflect.StructTag(tag).Lookup("pulumi"); !ok {
						continue
					}
					if field.Doc == nil {
						return nil, fmt.Errorf("%s.%s: a field the provider exposes has no doc comment", ts.Name.Name, field.Names[0].Name)
					}
					for _, n := range field.Names {
						td.fields = append(td.fields, [2]string{n.Name, describe(n.Name, field.Doc.Text())})
					}
				}
				if len(td.fields) > 0 {
					types = append(types, td)
				}
			}
		}
	}
	sort.Slice(types, func(i, j int) bool { return types[i].name < types[j].name })
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated from the doc comments by internal/testing/annotategen; DO NOT EDIT.\n\npackage %s\n\n", pkg)
	b.WriteString("import \"github.com/eventpipe/eventpipe/internal/annotate\"\n")
	for _, td := range types {
		fmt.Fprintf(&b, "\n// Annotate describes %s and its fields for a component provider's schema.\n", td.name)
		fmt.Fprintf(&b, "func (x *%s) Annotate(a annotate.Annotator) {\n", td.name)
		fmt.Fprintf(&b, "\ta.SetToken(%q, %q)\n", "index", tokenName(td.name))
		fmt.Fprintf(&b, "\ta.Describe(x, %s)\n", strconv.Quote(td.doc))
		for _, f := range td.fields {
			fmt.Fprintf(&b, "\ta.Describe(&x.%s, %s)\n", f[0], strconv.Quote(f[1]))
		}
		b.WriteString("}\n")
	}
	return format.Source(b.Bytes())
}

// UpdateEnv names the variable that makes Sync write File instead of
// comparing: EVENTPIPE_UPDATE_ANNOTATIONS=1 go test ./components/ ./alerts/ -run Annotations
const UpdateEnv = "EVENTPIPE_UPDATE_ANNOTATIONS"

// Sync generates File for the package in dir and, when UpdateEnv is set,
// writes it; otherwise it reports a File that differs from what the doc
// comments give.
func Sync(dir, pkg string, tokenName func(string) string) error {
	got, err := Generate(dir, pkg, tokenName)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, File)
	if os.Getenv(UpdateEnv) != "" {
		return os.WriteFile(path, got, 0o644)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("%s is out of date with the doc comments; run %s=1 go test ./%s/ -run Annotations", path, UpdateEnv, pkg)
	}
	return nil
}

// describe turns a field's doc comment into a description: one line, without
// the leading "Name is"/"Name are".
func describe(name, doc string) string {
	text := oneLine(doc)
	for _, verb := range []string{" is ", " are ", " "} {
		if rest, ok := strings.CutPrefix(text, name+verb); ok && rest != "" {
			return strings.ToUpper(rest[:1]) + rest[1:]
		}
	}
	return text
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Annotated is a type with an Annotate method.
type Annotated interface{ Annotate(annotate.Annotator) }

// Undescribed runs v's Annotate method and returns the fields tagged
// `pulumi` it gives no description, and "(type)" when the type itself has
// none or no token is set. v must be a pointer to a struct.
func Undescribed(v Annotated) []string {
	rec := &recorder{fields: map[any]bool{}, self: v}
	v.Annotate(rec)
	var missing []string
	if !rec.described || rec.token == "" {
		missing = append(missing, "(type)")
	}
	val := reflect.ValueOf(v).Elem()
	for _, f := range reflect.VisibleFields(val.Type()) {
		if _, ok := f.Tag.Lookup("pulumi"); !ok || !f.IsExported() {
			continue
		}
		if !rec.fields[val.FieldByIndex(f.Index).Addr().Interface()] {
			missing = append(missing, f.Name)
		}
	}
	return missing
}

// recorder is an annotate.Annotator remembering what was described.
type recorder struct {
	self      any
	fields    map[any]bool
	described bool
	token     string
}

func (r *recorder) Describe(i any, description string) {
	if description == "" {
		return
	}
	if i == r.self {
		r.described = true
		return
	}
	r.fields[i] = true
}

func (r *recorder) SetToken(module tokens.ModuleName, name tokens.TypeName) {
	r.token = string(module) + ":" + string(name)
}

// SetDefault, AddAlias and Deprecate complete annotate.Annotator; the
// generated methods do not call them.
func (r *recorder) SetDefault(any, any, ...string)              {}
func (r *recorder) AddAlias(tokens.ModuleName, tokens.TypeName) {}
func (r *recorder) Deprecate(any, string)                       {}
