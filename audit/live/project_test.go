package live

import (
	"encoding/json"
	"fmt"
	"testing"

	crm "google.golang.org/api/cloudresourcemanager/v1"

	"github.com/eventpipe/eventpipe/audit/model"
)

// TestFromCRMReadsAsPolicyData: a project policy read from the Resource Manager reads, as
// the model's policyData, exactly as the Resource Manager wrote its bindings and audit
// configs, for policies built from every combination of conditions, members and log types.
func TestFromCRMReadsAsPolicyData(t *testing.T) {
	for n := range 64 {
		p := &crm.Policy{Version: int64(n%3 + 1), Etag: "BwXhqDo="}
		for i := range n % 4 {
			b := &crm.Binding{Role: fmt.Sprintf("roles/r%d", i)}
			for m := range (n + i) % 3 {
				b.Members = append(b.Members, fmt.Sprintf("user:u%d@example.com", m))
			}
			if (n>>2+i)%2 == 1 {
				b.Condition = &crm.Expr{Expression: "request.time < timestamp('2030-01-01T00:00:00Z')", Title: "t", Description: fmt.Sprint(i), Location: "l"}
			}
			p.Bindings = append(p.Bindings, b)
		}
		if n&16 != 0 {
			ac := &crm.AuditConfig{Service: "allServices"}
			for i, lt := range []string{"ADMIN_READ", "DATA_WRITE", "DATA_READ"}[:n%3+1] {
				ac.AuditLogConfigs = append(ac.AuditLogConfigs, &crm.AuditLogConfig{LogType: lt, ExemptedMembers: []string{fmt.Sprintf("user:x%d", i)}[:n&32/32]})
			}
			p.AuditConfigs = append(p.AuditConfigs, ac)
		}
		got, err := fromCRM(p)
		if err != nil {
			t.Fatalf("policy %d: %v", n, err)
		}
		want, err := json.Marshal(&crm.Policy{Bindings: p.Bindings, AuditConfigs: p.AuditConfigs})
		if err != nil {
			t.Fatal(err)
		}
		if data := model.PolicyData(got); data != string(want) {
			t.Errorf("policy %d reads as\n%s\nwant\n%s", n, data, want)
		}
		if got.GetVersion() != int32(p.Version) {
			t.Errorf("policy %d: version %d, want %d", n, got.GetVersion(), p.Version)
		}
	}
}
