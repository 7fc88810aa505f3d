package inventory

import "strings"

// ShortName is the last segment of a resource name: "orders" for
// projects/p/subscriptions/orders.
func ShortName(full string) string {
	if i := strings.LastIndexByte(full, '/'); i >= 0 {
		return full[i+1:]
	}
	return full
}

// ProjectOf is the project of a resource name that starts projects/PROJECT/…, or "".
func ProjectOf(full string) string {
	rest, ok := strings.CutPrefix(full, "projects/")
	if !ok {
		return ""
	}
	project, _, _ := strings.Cut(rest, "/")
	return project
}

// LocationOf is the location of a resource name with a …/locations/LOCATION/… segment, or "".
func LocationOf(full string) string {
	_, rest, ok := strings.Cut(full, "/locations/")
	if !ok {
		return ""
	}
	location, _, _ := strings.Cut(rest, "/")
	return location
}

// TopicName is the full name of topic id in project.
func TopicName(project, id string) string { return "projects/" + project + "/topics/" + id }

// SubscriptionName is the full name of subscription id in project.
func SubscriptionName(project, id string) string {
	return "projects/" + project + "/subscriptions/" + id
}

// ServiceName is the full name of Cloud Run service id in project and location.
func ServiceName(project, location, id string) string {
	return "projects/" + project + "/locations/" + location + "/services/" + id
}

// ProjectName is the resource name of a project's own IAM policy: projects/ID.
func ProjectName(project string) string { return "projects/" + project }
