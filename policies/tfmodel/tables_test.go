package tfmodel

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/eventpipe/eventpipe/internal/testing/regoquery"
)

// TestTablesAreTheRegoModels holds every table and constant this package keeps to the
// Rego model's own (model*.rego), so one the plans in the tests never exercise cannot
// drift: the Rego is the definition, this package a copy tested against it.
func TestTablesAreTheRegoModels(t *testing.T) {
	q := regoquery.Prepare(t, `x := {
		"terraform_types": data.eventpipe.model.terraform_types,
		"single_blocks": data.eventpipe.model.single_blocks,
		"map_attributes": data.eventpipe.model.map_attributes,
		"renamed_attributes": data.eventpipe.model.renamed_attributes,
		"stateful_types": data.eventpipe.model.stateful_types,
		"linking_attributes": data.eventpipe.model.linking_attributes,
		"reserved_words": data.eventpipe.model.reserved_words,
		"max_module_depth": data.eventpipe.model.max_module_depth,
		"unknown_value": data.eventpipe.model.unknown_value,
		"secret_value": data.eventpipe.model.secret_value,
		"instance_key_pattern": data.eventpipe.model.instance_key_pattern,
		"name_pattern": data.eventpipe.model.name_pattern,
		"module_segment_pattern": data.eventpipe.model.module_segment_pattern,
		"resource_reference_pattern": data.eventpipe.model.resource_reference_pattern,
		"module_reference_pattern": data.eventpipe.model.module_reference_pattern,
		"variable_reference_pattern": data.eventpipe.model.variable_reference_pattern,
	}`)
	rs, err := q.Eval(context.Background())
	if err != nil || len(rs) != 1 {
		t.Fatalf("evaluating the model's tables: %v (%d results)", err, len(rs))
	}
	// Through JSON: sets become sorted arrays.
	data, err := json.Marshal(rs[0].Bindings["x"])
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	linking := map[string]any{}
	for typ, attributes := range linkingAttributes {
		linking[typ] = slices.Sorted(slices.Values(attributes)) // a Rego set of strings
	}
	goTables := map[string]any{
		"terraform_types":            terraformTypes,
		"single_blocks":              slices.Sorted(maps.Keys(singleBlocks)),
		"map_attributes":             slices.Sorted(maps.Keys(mapAttributes)),
		"renamed_attributes":         renamedAttributes,
		"stateful_types":             slices.Sorted(maps.Keys(statefulTypes)),
		"linking_attributes":         linking,
		"reserved_words":             slices.Sorted(maps.Keys(reservedWords)),
		"max_module_depth":           maxModuleDepth,
		"unknown_value":              unknownValue,
		"secret_value":               secretValue,
		"instance_key_pattern":       instanceKeyPattern,
		"name_pattern":               namePattern,
		"module_segment_pattern":     moduleSegmentRE.String(),
		"resource_reference_pattern": resourceReferenceRE.String(),
		"module_reference_pattern":   moduleReferenceRE.String(),
		"variable_reference_pattern": variableReferenceRE.String(),
	}
	data, err = json.Marshal(goTables)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	for name, value := range want {
		w, _ := json.Marshal(value)
		g, _ := json.Marshal(got[name])
		if string(w) != string(g) {
			t.Errorf("%s differs from the Rego model's:\nrego %s\ngo   %s", name, w, g)
		}
	}
	if len(got) != len(want) {
		t.Errorf("the Go tables are %d, the Rego query reads %d", len(got), len(want))
	}
}
