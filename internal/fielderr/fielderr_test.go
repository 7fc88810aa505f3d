package fielderr

import (
	"strings"
	"testing"
)

func TestError(t *testing.T) {
	tests := []struct {
		e    Error
		want string
	}{
		{Error{Pipeline: "orders", Path: "eventpipe:pipelines.orders.x", Value: "3", Allowed: "5–100", Fix: "raise it",
			Location: Location{File: "Pulumi.prod.yaml", Line: 7, Column: 3}},
			`Pulumi.prod.yaml:7: pipeline "orders": eventpipe:pipelines.orders.x = 3: allowed 5–100; fix: raise it`},
		{Error{Path: "project", Allowed: "a GCP project id", Fix: "set it"}, `project (not set): allowed a GCP project id; fix: set it`},
		{Error{In: "push envelope", Path: "message", Problem: "missing", Fix: "send one"}, `push envelope: message: missing; fix: send one`},
		{Error{In: "route orders", Path: "id", Value: `""`, Problem: "cannot name a document", Fix: "send a non-empty id"},
			`route orders: id = "": cannot name a document; fix: send a non-empty id`},
	}
	for _, tc := range tests {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
		if strings.Contains(tc.e.Error(), "\n") {
			t.Errorf("%q spans lines", tc.e.Error())
		}
	}
}
