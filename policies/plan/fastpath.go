package plan

import (
	"encoding/json"

	gojson "github.com/goccy/go-json"
)

// This file is the fast path of Parse: the top level of the document is walked once, and
// the big array (preview steps, deployment.resources, Terraform resource_changes) is
// decoded on every processor at once (decodeArray), each element straight to its
// resource with its OPA value. Whatever this path does not handle exactly like the
// general path (a document mixing formats, a field of an
// unexpected type, a key differing only in case from a known one, a duplicate key,
// malformed JSON, a step without op or urn, …) makes it give up, and Parse decodes the
// document the general way, which reports the error it always reported.

// topLevelField numbers the top-level keys the general path decodes (document's fields).
func topLevelField(key []byte) int {
	return known(key, "steps", "changeSummary", "version", "deployment", "format_version", "resource_changes", "planned_values", "configuration")
}

const (
	topSteps = iota
	topChangeSummary
	topVersion
	topDeployment
	topFormatVersion
	topResourceChanges
	topPlannedValues
	topConfiguration
)

func deploymentField(key []byte) int { return known(key, "resources") }

// topLevel holds what the fast path reads from the top of a document: the big array
// decoded element by element, a Terraform configuration's references, the small fields
// raw.
type topLevel struct {
	seen          uint64 // bit f: field f is present
	steps         []decodedStep
	resources     []exportedResource
	changes       []tfDecoded
	changeSummary []byte
	version       []byte
	formatVersion []byte
	configured    []tfConfigured
}

func (t *topLevel) has(f int) bool { return t.seen&(1<<f) != 0 }

// readTopLevel walks the top-level object, decoding the big arrays on every processor.
func readTopLevel(data []byte) (topLevel, bool) {
	var top topLevel
	d := newValueDecoder()
	d.reset(data)
	ok := d.fields(topLevelField, func(f int) bool {
		top.seen |= 1 << f
		var ok bool
		start := d.pos
		switch f {
		case topSteps:
			top.steps, d.pos, ok = decodeArray(d.data, d.pos, (*valueDecoder).step)
		case topDeployment:
			ok = d.fields(deploymentField, func(int) bool {
				var ok bool
				top.resources, d.pos, ok = decodeArray(d.data, d.pos, (*valueDecoder).exported)
				return ok
			})
		case topConfiguration:
			top.configured, ok = d.configuration()
		case topResourceChanges:
			top.changes, d.pos, ok = decodeArray(d.data, d.pos, func(d *valueDecoder, out *tfDecoded) bool {
				return out.decode(d)
			})
		default:
			ok = d.skip()
		}
		if !ok {
			return false
		}
		raw := d.data[start:d.pos]
		switch f {
		case topChangeSummary:
			top.changeSummary = raw
		case topVersion:
			top.version = raw
		case topFormatVersion:
			top.formatVersion = raw
		}
		return true
	})
	return top, ok && d.atEnd()
}

// parseFast is the fast path of Parse; ok is false when the document must take the
// general path.
func parseFast(data []byte) (*Plan, bool) {
	top, ok := readTopLevel(data)
	if !ok {
		return nil, false
	}
	pulumi := top.seen & (1<<topSteps | 1<<topChangeSummary | 1<<topVersion | 1<<topDeployment)
	terraform := top.seen & (1<<topFormatVersion | 1<<topResourceChanges | 1<<topPlannedValues | 1<<topConfiguration)
	switch {
	case pulumi != 0 && terraform != 0:
		return nil, false
	case top.has(topSteps) && !top.has(topVersion) && !top.has(topDeployment):
		return previewFast(&top)
	case top.has(topDeployment) && top.has(topVersion) && !top.has(topChangeSummary):
		return exportFast(&top)
	case top.has(topResourceChanges) && top.has(topFormatVersion):
		return terraformFast(&top)
	}
	return nil, false
}

// decodeSmall decodes a small top-level field as the general path does.
func decodeSmall(raw []byte, v any) bool {
	if gojson.Unmarshal(raw, v) == nil {
		return true
	}
	return json.Unmarshal(raw, v) == nil
}
