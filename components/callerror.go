package components

import (
	"runtime"
	"strings"

	"github.com/eventpipe/eventpipe/internal/srcpos"
)

// CallError is a constructor's error (its arguments' validation included) with the Go
// source position of the call that declared the component, taken the way the Pulumi SDK
// takes a resource registration's (runtime.Callers; pulumi sdk v3.200.0 go/pulumi/
// context.go, getSourcePosition): nothing is registered when the arguments are refused,
// so no registration carries it. Its message is Err's; render/program prints At before
// it when the call is in the team's program.
type CallError struct {
	// At is the constructor's caller.
	At srcpos.Frame
	// Err is the constructor's error.
	Err error
}

func (e *CallError) Error() string { return e.Err.Error() }

// Unwrap is Err.
func (e *CallError) Unwrap() error { return e.Err }

// calledAt is the position of the call of the exported constructor that calls it.
func calledAt() srcpos.Frame {
	var pcs [1]uintptr
	// Skip runtime.Callers, calledAt and the constructor.
	if runtime.Callers(3, pcs[:]) != 1 {
		return srcpos.Frame{}
	}
	f, _ := runtime.CallersFrames(pcs[:]).Next()
	return srcpos.Frame{File: f.File, Line: f.Line}
}

// declaredAt wraps a constructor's non-nil *err in a CallError at at.
func declaredAt(at srcpos.Frame, err *error) {
	if *err != nil && at.File != "" {
		*err = &CallError{At: at, Err: *err}
	}
}

// pkgPath is this package's import path, for callerOutside.
const pkgPath = "github.com/eventpipe/eventpipe/components."

// callerOutside is the position of the innermost caller outside this package: the
// program's call of the component that is being resolved (a check made only when an
// input is known, inside an apply, has no such frame on its stack).
func callerOutside() srcpos.Frame {
	var pcs [32]uintptr
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs[:])])
	for {
		f, more := frames.Next()
		if !strings.HasPrefix(f.Function, pkgPath) {
			return srcpos.Frame{File: f.File, Line: f.Line}
		}
		if !more {
			return srcpos.Frame{}
		}
	}
}

// declared is err as a CallError at the component's call, when d knows it.
func (d *deferrals) declared(err error) error {
	if err == nil || d.at.File == "" {
		return err
	}
	return &CallError{At: d.at, Err: err}
}
