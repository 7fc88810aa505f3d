package live

import (
	"context"
	"errors"
	"strings"

	"cloud.google.com/go/firestore/apiv1/admin/adminpb"

	"github.com/eventpipe/eventpipe/audit/inventory"
)

// readTTLFields reads the Firestore TTL policies of the databases the project's audited
// Cloud Run services store records in (their EVENTPIPE_STORE), which the TTL rule looks
// for. It runs after readServices.
func (r *reader) readTTLFields(ctx context.Context) error {
	dbs := inventory.FirestoreDatabases(r.p.Services)
	if len(dbs) == 0 {
		r.p.TTLFieldsRead = true
		return nil
	}
	name := inventory.ProjectName(r.p.ID)
	if r.c.Firestore == nil {
		r.gap(inventory.GapTTLFields, name, errors.New(r.c.notRead("Firestore Admin")))
		return nil
	}
	var fields []*adminpb.Field
	complete := true
	for _, db := range dbs {
		project, database, _ := strings.Cut(db, "/")
		if project != r.p.ID {
			r.gap(inventory.GapTTLFields, "projects/"+project+"/databases/"+database,
				errors.New("the database is in another project: audit that project as well"))
			complete = false
			continue
		}
		found, err := collect(r.c.Firestore.ListFields(ctx, &adminpb.ListFieldsRequest{
			Parent: "projects/" + project + "/databases/" + database + "/collectionGroups/-",
			Filter: "ttlConfig:*",
		}).All())
		fields = append(fields, found...)
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return ctxErr
			}
			r.gap(inventory.GapTTLFields, "projects/"+project+"/databases/"+database,
				refused("listing TTL fields", access{"datastore.indexes.list", "roles/datastore.indexViewer"}, err))
			complete = false
		}
	}
	r.p.TTLFields, r.p.TTLFieldsRead = fields, complete
	return nil
}
