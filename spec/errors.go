package spec

import (
	"fmt"
	"sort"
	"strings"

	"github.com/eventpipe/eventpipe/internal/english"
	"github.com/eventpipe/eventpipe/internal/fielderr"
)

// FieldError is one invalid config value: where it is, what was found, what
// is allowed and how to fix it. It is fielderr.Error, the one field error of
// eventpipe (alerts, the routes file and the push envelope report theirs with
// it too); its Error renders one line, e.g.
// `pipeline "orders": eventpipe:pipelines.orders.…maxDeliveryAttempts = 3: allowed 5–100; fix: …`.
type FieldError = fielderr.Error

// Errors is every problem found in one stack configuration. Validation
// collects all of them before reporting, so one run shows every fix needed.
type Errors []FieldError

// Error lists every problem, one per line.
func (es Errors) Error() string {
	lines := make([]string, 0, len(es)+1)
	lines = append(lines, fmt.Sprintf("invalid eventpipe configuration (%s):", english.Count(len(es), "problem", "problems")))
	for _, e := range es {
		lines = append(lines, "  - "+e.Error())
	}
	return strings.Join(lines, "\n")
}

// sorted orders errors by path so output is stable.
func (es Errors) sorted() Errors {
	sort.SliceStable(es, func(i, j int) bool { return es[i].Path < es[j].Path })
	return es
}

// collector accumulates FieldErrors.
type collector struct{ errs Errors }

func (c *collector) add(pipeline, path, value, allowed, fix string) {
	// Paths below an empty prefix (a standalone object) start with ".".
	path = strings.TrimPrefix(path, ".")
	c.errs = append(c.errs, FieldError{Pipeline: pipeline, Path: path, Value: value, Allowed: allowed, Fix: fix})
}

// errors returns the collected errors sorted, or nil when there are none.
func (c *collector) errors() Errors {
	if len(c.errs) == 0 {
		return nil
	}
	return c.errs.sorted()
}
