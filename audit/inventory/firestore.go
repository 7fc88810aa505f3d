package inventory

import (
	"slices"
	"strings"

	"cloud.google.com/go/run/apiv2/runpb"

	"github.com/eventpipe/eventpipe/consumer/settings"
)

// FirestoreDatabases are the distinct "PROJECT/DATABASE" Firestore stores the services'
// containers name in EVENTPIPE_STORE ("(default)" when the URL names no database).
func FirestoreDatabases(services []*runpb.Service) []string {
	var out []string
	for _, svc := range services {
		for _, c := range svc.GetTemplate().GetContainers() {
			for _, e := range c.GetEnv() {
				if e.GetName() != settings.Store {
					continue
				}
				rest, ok := strings.CutPrefix(e.GetValue(), "firestore://")
				if !ok {
					continue
				}
				project, db, _ := strings.Cut(rest, "/")
				if db == "" {
					db = "(default)"
				}
				if project != "" {
					out = append(out, project+"/"+db)
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
