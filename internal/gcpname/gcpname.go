// Package gcpname holds Google Cloud's naming rules that more than one part of
// eventpipe checks (the stack config in spec, the alert targets in alerts), so
// each rule is written once.
package gcpname

import (
	"regexp"
	"strings"
)

var (
	projectID  = regexp.MustCompile(`^[a-z][a-z0-9-]{4,28}[a-z0-9]$`)
	pubsubID   = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9._~%+-]{2,254}$`)
	runService = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,47}[a-z0-9])?$`)
	channel    = regexp.MustCompile(`^projects/[^/]+/notificationChannels/[^/]+$`)
)

// ProjectID reports whether s is a project ID: 6–30 lowercase letters, digits
// or hyphens, starting with a letter and not ending with a hyphen.
func ProjectID(s string) bool { return projectID.MatchString(s) }

// PubSubID reports whether s is a topic or subscription ID: 3–255 letters,
// digits or . _ ~ % + -, starting with a letter and not with "goog".
func PubSubID(s string) bool {
	return pubsubID.MatchString(s) && !strings.HasPrefix(strings.ToLower(s), "goog")
}

// RunService reports whether s is a Cloud Run service name: up to 49
// lowercase letters, digits or hyphens, starting with a letter and not ending
// with a hyphen.
func RunService(s string) bool { return runService.MatchString(s) }

// Channel reports whether s is a notification channel's full resource name,
// projects/PROJECT/notificationChannels/ID.
func Channel(s string) bool { return channel.MatchString(s) }

// Topic splits a topic's full name, projects/PROJECT/topics/ID, into its
// project and ID; ok is false for any other shape. The parts are not checked
// against ProjectID and PubSubID.
func Topic(name string) (project, id string, ok bool) {
	rest, ok := strings.CutPrefix(name, "projects/")
	if !ok {
		return "", "", false
	}
	project, id, ok = strings.Cut(rest, "/topics/")
	return project, id, ok && project != "" && id != "" && !strings.Contains(project, "/") && !strings.Contains(id, "/")
}

// RunServiceURL is the deterministic URL Cloud Run gives a service:
// https://SERVICE-PROJECT_NUMBER.REGION.run.app
// (cloud.google.com/run/docs/triggering/https-request#deterministic).
func RunServiceURL(service, projectNumber, region string) string {
	return "https://" + service + "-" + projectNumber + "." + region + ".run.app"
}
