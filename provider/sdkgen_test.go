package provider_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/eventpipe/eventpipe/internal/testing/docblock"
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

// readmeSection is the section of docs/deploy.md (the deploy guide, moved out of the README) the examples of other languages are in.
const readmeSection = "\n## From TypeScript, Python or YAML\n"

// readmeExample is the first code block in language of the README's section on other
// languages.
func readmeExample(t *testing.T, language string) string {
	t.Helper()
	return docblock.After(t, "docs/deploy.md", readmeSection, language)
}

// sdkgenModule is tools/sdkgen, the module of the SDK generator.
var sdkgenModule = filepath.Join("..", "tools", "sdkgen")

// sdkLanguages are the SDKs the tests generate.
var sdkLanguages = []string{"nodejs", "python"}

// sdkCacheDir is where generated SDKs and sdkgen binaries are kept between
// runs: os.UserCacheDir()/eventpipe/sdkgen. Each entry is named by a hash of
// everything it is made from, so a stale entry is never found, only unused.
func sdkCacheDir(t *testing.T) string {
	t.Helper()
	base, err := os.UserCacheDir()
	if err != nil {
		t.Logf("no user cache directory (%v): generating the SDKs afresh", err)
		return t.TempDir()
	}
	dir := filepath.Join(base, "eventpipe", "sdkgen")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// hashOf is the hex SHA-256 of parts, each length-prefixed so no two lists
// of parts share a hash.
func hashOf(parts ...[]byte) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:", len(p))
		h.Write(p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// sdkgenSourceHash is the hash of what the sdkgen binary is built from: its
// main.go, go.mod and go.sum (which pin pkg/v3 and every dependency) and
// the Go toolchain.
func sdkgenSourceHash(t *testing.T) string {
	t.Helper()
	parts := [][]byte{[]byte(runtime.Version())}
	for _, name := range []string{"main.go", "go.mod", "go.sum"} {
		data, err := os.ReadFile(filepath.Join(sdkgenModule, name))
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, []byte(name), data)
	}
	return hashOf(parts...)
}

// cached returns cache/name, making it first with build(tmp) into a fresh
// directory that is then renamed into place, so a concurrent run or an
// interrupted one never sees a half-made entry.
func cached(t *testing.T, cache, name string, build func(tmp string)) string {
	t.Helper()
	dir := filepath.Join(cache, name)
	if _, err := os.Stat(dir); err == nil {
		t.Logf("cached: %s", dir)
		return dir
	}
	tmp, err := os.MkdirTemp(cache, "tmp-"+name+"-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	build(tmp)
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(dir); serr != nil { // not another run having made it first
			t.Fatal(err)
		}
	}
	return dir
}

// generatedSDKs returns the directory holding, under nodejs/ and python/, the
// SDKs tools/sdkgen (Pulumi's own code generator, the one `pulumi package
// add` runs) generates from schema, the Node.js one compiled with tsc against
// the Pulumi Node.js SDK (its bin/, which a program imports). They are
// cached in sdkCacheDir by a hash of everything they are made from (the
// schema, the generator's source and Go toolchain, the npm lock of tsc and
// @pulumi/pulumi), and the sdkgen binary by the hash of its source: a run
// with the inputs of an earlier run neither builds, generates nor compiles
// the SDK, and any change to an input does all three again.
func generatedSDKs(t *testing.T, schema []byte, tsc string) string {
	t.Helper()
	cache := sdkCacheDir(t)
	source := sdkgenSourceHash(t)
	lock, err := os.ReadFile(filepath.Join("..", "tools", "tsc", "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	return cached(t, cache, "sdk-"+hashOf([]byte(source), schema, lock), func(tmp string) {
		bin := cached(t, cache, "bin-"+source, func(bin string) {
			run(t, sdkgenModule, "go", "build", "-o", filepath.Join(bin, "sdkgen"), ".")
		})
		schemaPath := filepath.Join(tmp, "schema.json")
		if err := os.WriteFile(schemaPath, schema, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, language := range sdkLanguages {
			run(t, ".", filepath.Join(bin, "sdkgen"), "-schema", schemaPath, "-language", language, "-out", filepath.Join(tmp, language))
		}
		nodejs := filepath.Join(tmp, "nodejs")
		link := linkNodeModules(t, nodejs)
		run(t, nodejs, tsc, "--project", "tsconfig.json")
		if err := os.Remove(link); err != nil { // the cache holds no link into a checkout
			t.Fatal(err)
		}
	})
}

// linkNodeModules links dir/node_modules to the modules `make deps`
// installs (tsc, @pulumi/pulumi, @types) and returns the link.
func linkNodeModules(t *testing.T, dir string) string {
	t.Helper()
	modules, err := filepath.Abs(nodeModules)
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "node_modules")
	if err := os.Symlink(modules, link); err != nil {
		t.Fatal(err)
	}
	return link
}

// sdkCopy copies the generated SDK of language under sdks to a new directory
// (the compilers write into it) and returns the directory and its file names.
func sdkCopy(t *testing.T, sdks, language string) (string, []string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), language)
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(sdks, language))); err != nil {
		t.Fatal(err)
	}
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
// user never gets an SDK that does not compile. The SDKs (the Node.js one
// compiled) come from the cache of generatedSDKs when nothing they are made
// from changed; the README's programs are compiled against them every run.
func TestGeneratedSDKsCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("generates the SDKs and runs tsc and python on them: make test runs it")
	}
	tsc := tscPath(t)
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 not found on PATH: %v", err)
	}
	sdks := generatedSDKs(t, servedSchema(t), tsc)

	t.Run("typescript", func(t *testing.T) {
		dir, files := sdkCopy(t, sdks, "nodejs")
		// The sources and what tsc made of them (generatedSDKs compiles them).
		for _, want := range []string{"pipeline.ts", "subscription.ts", "topic.ts", "consumer.ts", "firestoreTTL.ts", "types/input.ts", "package.json",
			"bin/index.js", "bin/index.d.ts", "bin/pipeline.d.ts", "bin/types/input.d.ts"} {
			if !slices.Contains(files, want) {
				t.Errorf("the Node.js SDK has no %s: %v", want, files)
			}
		}
		modules, err := filepath.Abs(nodeModules)
		if err != nil {
			t.Fatal(err)
		}
		linkNodeModules(t, dir)

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
		dir, files := sdkCopy(t, sdks, "python")
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

// TestSDKCacheKeys: the cache key of generatedSDKs changes with every input
// (a byte of any part, where one part ends and the next begins, a part more),
// so a cached SDK is only ever one made from the inputs of this run.
func TestSDKCacheKeys(t *testing.T) {
	base := [][]byte{[]byte("go1.26 main.go go.mod go.sum"), []byte(`{"name":"eventpipe"}`), []byte(`{"lockfileVersion":3}`)}
	seen := map[string]string{hashOf(base...): "base"}
	var variants []struct {
		name  string
		parts [][]byte
	}
	add := func(name string, parts ...[]byte) {
		variants = append(variants, struct {
			name  string
			parts [][]byte
		}{name, parts})
	}
	for i, p := range base {
		for j := range p {
			changed := slices.Clone(base)
			changed[i] = slices.Clone(p)
			changed[i][j] ^= 1
			add(fmt.Sprintf("part %d byte %d", i, j), changed...)
		}
		if i+1 < len(base) && len(p) > 0 { // move the boundary between part i and i+1
			changed := slices.Clone(base)
			changed[i], changed[i+1] = p[:len(p)-1], append([]byte{p[len(p)-1]}, base[i+1]...)
			add(fmt.Sprintf("boundary %d", i), changed...)
		}
	}
	add("a part more", append(slices.Clone(base), nil)...)
	add("a part less", base[:len(base)-1]...)
	for _, v := range variants {
		key := hashOf(v.parts...)
		if other, dup := seen[key]; dup {
			t.Errorf("%s has the key of %s", v.name, other)
		}
		seen[key] = v.name
	}
}
