package main

import (
	"context"
	"log/slog"
	"slices"
	"strings"

	"github.com/eventpipe/eventpipe/consumer/engine"
	"github.com/eventpipe/eventpipe/consumer/settings"
	"github.com/eventpipe/eventpipe/internal/spelling"
)

// failpointEnv is read by run too (crash tests only).
const failpointEnv = engine.FailpointEnv

// unreadMessage is the log message of a variable no setting reads.
const unreadMessage = "environment variable not read"

// recordingLookup is lookup that adds every name asked for to read: after the
// configuration is read, read holds exactly the variables the consumer knows.
func recordingLookup(read map[string]bool, lookup func(string) (string, bool)) func(string) (string, bool) {
	return func(k string) (string, bool) {
		read[k] = true
		return lookup(k)
	}
}

// unread is an EVENTPIPE_ variable set in the environment that no setting reads, and
// the read variable it most likely misspells ("" when none is close).
type unread struct{ name, meant string }

// unreadVariables returns, sorted and once each, the EVENTPIPE_ variables of environ
// (os.Environ's KEY=VALUE form) that read does not hold. A misspelt one would otherwise
// leave its setting at the default without a word.
func unreadVariables(environ []string, read map[string]bool) []unread {
	var known []string
	for k := range read {
		if strings.HasPrefix(k, settings.Prefix) {
			known = append(known, k)
		}
	}
	slices.Sort(known) // spelling.Closest keeps the first of equals
	var names []string
	for _, kv := range environ {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, settings.Prefix) && !read[name] {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var out []unread
	for _, name := range slices.Compact(names) {
		meant, _ := spelling.Closest(name, known)
		out = append(out, unread{name: name, meant: meant})
	}
	return out
}

// warnUnread logs one WARNING per unread variable. It is not an error: a newer Cloud
// Run component may set a variable this image does not know yet.
func warnUnread(ctx context.Context, log *slog.Logger, vars []unread) {
	for _, v := range vars {
		fix := "no setting of the consumer reads it, so it changes nothing (unless a route's action.urlEnv names it): remove it or correct its name (docs/consumer.md lists them)"
		if v.meant != "" {
			fix = "did you mean " + v.meant + "? The consumer reads no " + v.name + ", so that setting keeps its default"
		}
		log.WarnContext(ctx, unreadMessage, "variable", v.name, "fix", fix)
	}
}
