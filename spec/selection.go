package spec

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"
)

// Selection picks a stack and its config file, as the commands' --stack, --stack-file
// and --stack-dir flags do.
type Selection struct {
	// Stack is the stack name: dev, staging, prod, or any other.
	Stack string
	// ConfigFile is the stack config file; default Pulumi.<Stack>.yaml in StackDir.
	ConfigFile string
	// StackDir is the folder of the stack config files; default: the
	// stackConfigDir of the nearest Pulumi.yaml at or above the working directory.
	StackDir string
}

// Path resolves the stack config file of s.
func (s Selection) Path() (string, error) {
	if s.ConfigFile != "" {
		if _, err := os.Stat(s.ConfigFile); errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("--stack-file %s: no such file (the path is relative to the current folder)", s.ConfigFile)
		}
		return s.ConfigFile, nil
	}
	dir := s.StackDir
	if dir == "" {
		var err error
		if dir, err = FindStackDir("."); err != nil {
			return "", err
		}
	}
	path := StackFilePath(dir, s.Stack)
	if _, err := os.Stat(path); err != nil {
		known, _ := filepath.Glob(filepath.Join(dir, "Pulumi.*.yaml"))
		names := make([]string, 0, len(known))
		for _, k := range known {
			names = append(names, strings.TrimSuffix(strings.TrimPrefix(filepath.Base(k), "Pulumi."), ".yaml"))
		}
		if len(names) == 0 {
			return "", fmt.Errorf("no config for stack %q (%s): %s holds no Pulumi.<stack>.yaml file: pass --stack-dir with the folder of the stack files, or --stack-file FILE", s.Stack, path, dir)
		}
		return "", fmt.Errorf("no config for stack %q (%s); known stacks: %s (or pass --stack-file FILE)", s.Stack, path, strings.Join(names, ", "))
	}
	return path, nil
}

// Load reads the selected stack config file and validates the stack.
func (s Selection) Load() (*Stack, *StackFile, error) {
	path, err := s.Path()
	if err != nil {
		return nil, nil, err
	}
	file, err := ReadStackFile(path)
	if err != nil {
		return nil, nil, err
	}
	st, err := file.Load(s.Stack)
	return st, file, err
}

// FindStackDir walks up from start to the first Pulumi.yaml and returns its
// stackConfigDir (or its own folder when unset).
func FindStackDir(start string) (string, error) {
	dir, err := filepath.Abs(start)
	if err != nil {
		return "", fmt.Errorf("find Pulumi.yaml: %w", err)
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "Pulumi.yaml"))
		if err == nil {
			var project struct {
				StackConfigDir string `yaml:"stackConfigDir"`
			}
			if err := yaml.Unmarshal(data, &project); err != nil {
				return "", fmt.Errorf("parse %s: %w", filepath.Join(dir, "Pulumi.yaml"), err)
			}
			return filepath.Join(dir, project.StackConfigDir), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no Pulumi.yaml in this folder or above; run from the eventpipe repository, or pass --stack-file FILE or --stack-dir DIR")
		}
		dir = parent
	}
}
