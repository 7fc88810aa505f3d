package devpipe

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// routesFiles returns each pipeline's routes file for its local consumer:
// Options.Routes when set, else the stack's consumer.routes ("" means the
// consumer's default routes). consumer.routes names a file inside the
// consumer's image (the handler example has /etc/eventpipe/routes.json), which
// this machine seldom has: every pipeline whose file is missing is reported at
// once, with the fix (--routes, the file on this machine).
func routesFiles(opts Options) (map[string]string, error) {
	out := map[string]string{}
	var problems []string
	for _, p := range opts.Stack.SortedPipelines() {
		path, from := p.Consumer.Routes, "consumer.routes"
		if opts.Routes != "" {
			path, from = opts.Routes, "--routes"
		}
		out[p.Name] = path
		if path == "" || strings.HasPrefix(strings.TrimSpace(path), "{") {
			continue // default routes, or routes inline
		}
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			if from == "--routes" {
				problems = append(problems, fmt.Sprintf("--routes %s: no such file on this machine", path))
				break // one flag, one problem
			}
			problems = append(problems, fmt.Sprintf("pipeline %s: %s is %s, a path inside the consumer's image that this machine does not have; "+
				"fix: pass --routes FILE with the routes file on this machine (e.g. --routes examples/handlers/routes.json)", p.Name, from, path))
		} else if err != nil {
			problems = append(problems, fmt.Sprintf("pipeline %s: %s %s: %v", p.Name, from, path, err))
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("devpipe: the consumers' routes files (%d problems):\n  - %s", len(problems), strings.Join(problems, "\n  - "))
	}
	return out, nil
}
