package spec

import (
	"fmt"
	"regexp"
	"strings"
)

// The grammar of a container image reference (github.com/distribution/reference,
// which Docker, Artifact Registry and Cloud Run follow):
//
//	reference := name [ ":" tag ] [ "@" digest ]
//	name      := [ domain "/" ] path-component { "/" path-component }
//	domain    := domain-component { "." domain-component } [ ":" port ]
var (
	// domainComponent may hold upper-case letters: host names are case-insensitive.
	domainComponent = regexp.MustCompile(`^([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])$`)
	// pathComponent is lower case: separators (., _, __, -…) only between alphanumerics.
	pathComponent = regexp.MustCompile(`^[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*$`)
	imageTag      = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	sha256Digest  = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	portNumber    = regexp.MustCompile(`^[0-9]+$`)
)

// imageProblem returns why image is not a container image reference pinned by
// tag or digest, as the fix to print, or "" when it is one.
func imageProblem(image string) string {
	name, digest, hasDigest := strings.Cut(image, "@")
	if hasDigest && !sha256Digest.MatchString(digest) {
		return fmt.Sprintf("the digest %q is not sha256: and 64 lower-case hex digits; copy it from `gcloud artifacts docker images list` or `docker buildx imagetools inspect`", digest)
	}
	tag := ""
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name, tag = name[:i], name[i+1:]
		if !imageTag.MatchString(tag) {
			return fmt.Sprintf("the tag %q has characters a tag cannot have: use letters, digits, _, . and - (at most 128, not starting with . or -)", tag)
		}
	}
	parts := strings.Split(name, "/")
	if len(parts) > 1 && (strings.ContainsAny(parts[0], ".:") || parts[0] == "localhost" || parts[0] != strings.ToLower(parts[0])) {
		host, port, hasPort := strings.Cut(parts[0], ":")
		for _, c := range strings.Split(host, ".") {
			if !domainComponent.MatchString(c) {
				return fmt.Sprintf("the registry host %q is not a host name", parts[0])
			}
		}
		if hasPort && !portNumber.MatchString(port) {
			return fmt.Sprintf("the registry port %q is not a number", port)
		}
		parts = parts[1:]
	}
	for _, c := range parts {
		if !pathComponent.MatchString(c) {
			return fmt.Sprintf("the repository path %q must be lower case letters and digits, separated by ., _, __ or -", strings.Join(parts, "/"))
		}
	}
	if tag == "" && !hasDigest {
		return "add a tag or digest; an untagged image silently means :latest"
	}
	return ""
}
