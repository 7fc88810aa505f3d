// Package fielderr is eventpipe's one error for a bad value someone wrote — in a stack
// config, an alerts block, a routes file, a push envelope or a message's payload: which
// field, the value found, what is wrong or allowed, and how to fix it. spec.FieldError,
// alerts.FieldError, envelope.FieldError and route.FieldError are this type, so every
// such message reads alike and one errors.As finds any of them.
package fielderr

import (
	"fmt"
	"strings"
)

// Location is a place in a file someone wrote (a stack config file).
type Location struct {
	// File is the path of the file.
	File string `json:"file"`
	// Line is 1-based.
	Line int `json:"line"`
	// Column is 1-based.
	Column int `json:"column"`
}

// String renders file:line:column.
func (l Location) String() string { return fmt.Sprintf("%s:%d:%d", l.File, l.Line, l.Column) }

// Error is one invalid value: where it is, what was found, what is wrong or allowed, and
// how to fix it.
type Error struct {
	// Pipeline is the pipeline the value belongs to; empty for stack-level keys and
	// outside a stack.
	Pipeline string
	// In names the document the field is in when Path alone does not say, e.g.
	// "push envelope" or "route orders".
	In string
	// Path is the field's path, e.g. eventpipe:pipelines.orders.subscriptions.main.ackDeadline,
	// alerts.push.serverErrorWarning or message.data.
	Path string
	// Value is the offending value as written ("" when it is missing).
	Value string
	// Problem says what is wrong, when Allowed alone does not.
	Problem string
	// Allowed describes the accepted values or range.
	Allowed string
	// Fix tells the reader what to change.
	Fix string
	// Location is where the value is written, when read from a file.
	Location Location
}

// Error renders the problem on one line:
// [file:line: ][pipeline "p": ][in: ]path[ = value| (not set)][: problem][: allowed …]; fix: …,
// e.g. `pipeline "orders": eventpipe:pipelines.orders.…maxDeliveryAttempts = 3: allowed 5–100; fix: …`
// or `push envelope: message.data: decoded data is a JSON array, not an object; fix: …`.
func (e Error) Error() string {
	var b strings.Builder
	if e.Location.File != "" {
		fmt.Fprintf(&b, "%s:%d: ", e.Location.File, e.Location.Line)
	}
	if e.Pipeline != "" {
		fmt.Fprintf(&b, "pipeline %q: ", e.Pipeline)
	}
	if e.In != "" {
		b.WriteString(e.In + ": ")
	}
	b.WriteString(e.Path)
	switch {
	case e.Value != "":
		fmt.Fprintf(&b, " = %s", e.Value)
	case e.Problem == "":
		b.WriteString(" (not set)")
	}
	if e.Problem != "" {
		b.WriteString(": " + e.Problem)
	}
	if e.Allowed != "" {
		b.WriteString(": allowed " + e.Allowed)
	}
	b.WriteString("; fix: " + e.Fix)
	return b.String()
}
