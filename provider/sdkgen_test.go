package provider_test

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// nodeModules holds the TypeScript compiler and @pulumi/pulumi that
// `make deps` installs from tools/tsc (npm ci).
var nodeModules = filepath.Join("..", ".tools", "tsc", "node_modules")

// run runs a command in dir and fails the test with its output if it fails.
func run(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

// tscPath is the TypeScript compiler `make deps` installs. Missing, the test
// is skipped on a workstation and fails in CI, where make deps has run.
func tscPath(t *testing.T) string {
	t.Helper()
	tsc, err := filepath.Abs(filepath.Join(nodeModules, ".bin", "tsc"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tsc); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("tsc is not installed (%v): make deps installs it from tools/tsc", err)
		}
		t.Skipf("tsc is not installed (%v): run make deps", err)
	}
	return tsc
}

// readmeSection is the README section the examples of other languages are in.
const readmeSection = "\n### From TypeScript, Python or YAML\n"

// readmeExample is the first code block in language of the README's
// section on other languages.
func readmeExample(t *testing.T, language string) string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), readmeSection)
	if !ok {
		t.Fatalf("the README has no section %q", strings.TrimSpace(readmeSection))
	}
	_, rest, ok := strings.Cut(section, "\n```"+language+"\n")
	if !ok {
		t.Fatalf("the README has no %s example", language)
	}
	block, _, ok := strings.Cut(rest, "\n```\n")
	if !ok {
		t.Fatalf("the README's %s example does not end", language)
	}
	return block + "\n"
}

// generateSDK writes the language SDK of the served schema under a new
// directory with tools/sdkgen, Pulumi's own code generator (the one `pulumi
// package add` runs), and returns the directory and its file names.
func generateSDK(t *testing.T, sdkgen, schemaPath, language string) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	run(t, ".", sdkgen, "-schema", schemaPath, "-language", language, "-out", dir)
	var names []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, path)
			names = append(names, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir, names
}

// TestGeneratedSDKsCompile generates the Node.js and Python SDKs from the
// schema the provider serves over gRPC, as `pulumi package add` does for a
// TypeScript or Python program, compiles the TypeScript one with tsc
// against the Pulumi Node.js SDK and byte-compiles the Python one, so a
// user never gets an SDK that does not compile.
func TestGeneratedSDKsCompile(t *testing.T) {
	tsc := tscPath(t)
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 not found on PATH: %v", err)
	}
	work := t.TempDir()
	schemaPath := filepath.Join(work, "schema.json")
	if err := os.WriteFile(schemaPath, servedSchema(t), 0o644); err != nil {
		t.Fatal(err)
	}
	sdkgen := filepath.Join(work, "sdkgen")
	run(t, filepath.Join("..", "tools", "sdkgen"), "go", "build", "-o", sdkgen, ".")

	t.Run("typescript", func(t *testing.T) {
		dir, files := generateSDK(t, sdkgen, schemaPath, "nodejs")
		for _, want := range []string{"pipeline.ts", "subscription.ts", "topic.ts", "consumer.ts", "firestoreTTL.ts", "types/input.ts", "package.json"} {
			if !slices.Contains(files, want) {
				t.Errorf("the Node.js SDK has no %s: %v", want, files)
			}
		}
		modules, err := filepath.Abs(nodeModules)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
			t.Fatal(err)
		}
		run(t, dir, tsc, "--project", "tsconfig.json")

		// The README's TypeScript example, compiled against this SDK as
		// @eventpipe/eventpipe.
		program := t.TempDir()
		for name, target := range map[string]string{
			"@pulumi":              filepath.Join(modules, "@pulumi"),
			"@types":               filepath.Join(modules, "@types"),
			"@eventpipe/eventpipe": dir,
		} {
			link := filepath.Join(program, "node_modules", filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
		}
		example := readmeExample(t, "typescript")
		if err := os.WriteFile(filepath.Join(program, "index.ts"), []byte(example), 0o644); err != nil {
			t.Fatal(err)
		}
		run(t, program, tsc, "--strict", "--noEmit", "--target", "ES2020", "--module", "commonjs",
			"--moduleResolution", "node", "index.ts")
	})
	t.Run("python", func(t *testing.T) {
		dir, files := generateSDK(t, sdkgen, schemaPath, "python")
		for _, want := range []string{"pulumi_eventpipe/pipeline.py", "pulumi_eventpipe/subscription.py", "pulumi_eventpipe/_inputs.py", "pyproject.toml"} {
			if !slices.Contains(files, want) {
				t.Errorf("the Python SDK has no %s: %v", want, files)
			}
		}
		example := filepath.Join(dir, "readme_example.py")
		if err := os.WriteFile(example, []byte(readmeExample(t, "python")), 0o644); err != nil {
			t.Fatal(err)
		}
		run(t, dir, python, "-m", "compileall", "-q", ".")
		// The README's Python example calls only classes and arguments the
		// SDK has (the Pulumi Python SDK cannot be installed here to run it).
		checker, err := filepath.Abs(filepath.Join("testdata", "check_python_example.py"))
		if err != nil {
			t.Fatal(err)
		}
		run(t, dir, python, checker, "pulumi_eventpipe", "eventpipe", example)
	})
}
