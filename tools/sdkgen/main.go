// Command sdkgen generates a Pulumi package's Node.js or Python SDK from its
// schema with Pulumi's own code generators (github.com/pulumi/pulumi/pkg/v3
// codegen), the ones the Pulumi CLI's language hosts run for `pulumi package
// add`. The provider tests run it on the schema the eventpipe provider
// serves and compile what it writes.
//
// It is a module of its own so its pkg/v3 can be newer than the v3.200.0
// the eventpipe module builds against: that version computes the relative
// imports of nested Node.js and Python modules (types/, config/) from
// filepath.Rel's pre-Go 1.26 output and, built with Go 1.26, writes
// "./utilities" where "../utilities" is meant, so its TypeScript SDK does
// not compile (fixed upstream in pulumi/pulumi#21835; v3.224.0 has it).
//
//	sdkgen -schema schema.json -language nodejs -out DIR
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	nodejsgen "github.com/pulumi/pulumi/pkg/v3/codegen/nodejs"
	pythongen "github.com/pulumi/pulumi/pkg/v3/codegen/python"
	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
)

func main() {
	schemaPath := flag.String("schema", "", "the package schema (JSON)")
	language := flag.String("language", "", "nodejs or python")
	out := flag.String("out", "", "the directory the SDK is written to")
	flag.Parse()
	if err := generate(*schemaPath, *language, *out); err != nil {
		fmt.Fprintln(os.Stderr, "sdkgen:", err)
		os.Exit(1)
	}
}

// generate writes the language SDK of the schema at schemaPath under out.
func generate(schemaPath, language, out string) error {
	if schemaPath == "" || out == "" {
		return errors.New("-schema and -out are required")
	}
	raw, err := os.ReadFile(schemaPath)
	if err != nil {
		return fmt.Errorf("read the schema: %w", err)
	}
	var spec schema.PackageSpec
	if err := json.Unmarshal(raw, &spec); err != nil {
		return fmt.Errorf("parse the schema %s: %w", schemaPath, err)
	}
	pkg, diags, err := schema.BindSpec(spec, nil, schema.ValidationOptions{})
	if err != nil {
		return fmt.Errorf("bind the schema: %w", err)
	}
	if diags.HasErrors() {
		return fmt.Errorf("bind the schema: %v", diags)
	}
	var files map[string][]byte
	switch language {
	case "nodejs":
		// A local SDK, as `pulumi package add` generates for a TypeScript program.
		files, err = nodejsgen.GeneratePackage("pulumi", pkg, nil, nil, true, nil)
	case "python":
		files, err = pythongen.GeneratePackage("pulumi", pkg, nil, nil)
	default:
		return fmt.Errorf("-language %q: allowed nodejs or python", language)
	}
	if err != nil {
		return fmt.Errorf("generate the %s SDK: %w", language, err)
	}
	for name, content := range files {
		path := filepath.Join(out, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, content, 0o644); err != nil {
			return err
		}
	}
	return nil
}
