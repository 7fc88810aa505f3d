// Package plantest edits `pulumi preview --json` documents in tests: find a resource's
// state by type and name, change its inputs, drop it, write the document back. Tests use
// it to break a healthy plan one way at a time and check that exactly one rule fires.
package plantest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Doc is a decoded preview document.
type Doc map[string]any

// TB is the part of testing.TB the helpers use.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Parse decodes a preview document.
func Parse(t TB, data []byte) Doc {
	t.Helper()
	var d Doc
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("decoding preview document: %v", err)
	}
	return d
}

func (d Doc) steps() []any {
	s, _ := d["steps"].([]any)
	return s
}

func matches(step any, typ, name string) bool {
	st, _ := step.(map[string]any)
	urn, _ := st["urn"].(string)
	return strings.HasSuffix(urn, typ+"::"+name)
}

// State returns the newState of the resource of type typ named name.
func (d Doc) State(t TB, typ, name string) map[string]any {
	t.Helper()
	for _, s := range d.steps() {
		if matches(s, typ, name) {
			return s.(map[string]any)["newState"].(map[string]any)
		}
	}
	t.Fatalf("the plan has no %s %s", typ, name)
	return nil
}

// Inputs returns the inputs of the resource of type typ named name.
func (d Doc) Inputs(t TB, typ, name string) map[string]any {
	t.Helper()
	return d.State(t, typ, name)["inputs"].(map[string]any)
}

// Drop removes the resource of type typ named name from the plan.
func (d Doc) Drop(t TB, typ, name string) {
	t.Helper()
	var keep []any
	for _, s := range d.steps() {
		if !matches(s, typ, name) {
			keep = append(keep, s)
		}
	}
	if len(keep) == len(d.steps()) {
		t.Fatalf("the plan has no %s %s", typ, name)
	}
	d["steps"] = keep
}

// JSON encodes the document.
func (d Doc) JSON(t TB) []byte {
	t.Helper()
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		t.Fatalf("encoding preview document: %v", fmt.Sprint(err))
	}
	return b
}

// SetOp changes the preview operation of the resource of type typ named name.
func (d Doc) SetOp(t TB, typ, name, op string) {
	t.Helper()
	for _, s := range d.steps() {
		if matches(s, typ, name) {
			s.(map[string]any)["op"] = op
			return
		}
	}
	t.Fatalf("the plan has no %s %s", typ, name)
}

// Keep drops every step but those of the resource of type typ named name and of the root
// stack, as a preview of a change to that one resource prints without --show-sames.
func (d Doc) Keep(t TB, typ, name string) {
	t.Helper()
	var keep []any
	for _, s := range d.steps() {
		if matches(s, typ, name) || isRootStack(s) {
			keep = append(keep, s)
		}
	}
	if len(keep) < 2 {
		t.Fatalf("the plan has no %s %s, or no root stack", typ, name)
	}
	d["steps"] = keep
}

// isRootStack reports whether a step is the root stack's.
func isRootStack(step any) bool {
	st, _ := step.(map[string]any)
	urn, _ := st["urn"].(string)
	return strings.Contains(urn, "::pulumi:pulumi:Stack::")
}

// Delete turns the step of the resource of type typ named name into the delete step
// pulumi preview prints for a resource the program no longer declares: op "delete", the
// former state as oldState and no newState; retain marks the state retainOnDelete, as the
// engine records that resource option.
func (d Doc) Delete(t TB, typ, name string, retain bool) {
	t.Helper()
	for _, s := range d.steps() {
		if matches(s, typ, name) {
			st := s.(map[string]any)
			state, _ := st["newState"].(map[string]any)
			if state == nil {
				t.Fatalf("%s %s has no newState to delete", typ, name)
			}
			if retain {
				state["retainOnDelete"] = true
			}
			st["op"], st["oldState"] = "delete", state
			delete(st, "newState")
			return
		}
	}
	t.Fatalf("the plan has no %s %s", typ, name)
}

// Ref names a resource of a document by type and name.
type Ref struct{ Type, Name string }

// KeepChanged drops every step but those of the resources keep and of the root stack, as
// pulumi preview prints a change to those resources without --show-sames: the root stack's
// step becomes "same" and the change summary counts every dropped resource as unchanged.
func (d Doc) KeepChanged(t TB, keep ...Ref) {
	t.Helper()
	var kept []any
	summary := map[string]any{}
	same := 0
	for _, s := range d.steps() {
		st := s.(map[string]any)
		switch {
		case isRootStack(s):
			st["op"] = "same"
			kept = append(kept, s)
			same++
		case slices.ContainsFunc(keep, func(r Ref) bool { return matches(s, r.Type, r.Name) }):
			kept = append(kept, s)
			op, _ := st["op"].(string)
			n, _ := summary[op].(int)
			summary[op] = n + 1
		default:
			same++
		}
	}
	if len(kept) != len(keep)+1 {
		t.Fatalf("kept %d steps of %v and the root stack", len(kept), keep)
	}
	summary["same"] = same
	d["steps"], d["changeSummary"] = kept, summary
}
