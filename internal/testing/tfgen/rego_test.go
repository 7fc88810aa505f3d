package tfgen

import (
	"context"

	"github.com/open-policy-agent/opa/v1/rego"
)

// The queries of the rules' model of a plan: modelQuery evaluates what the rules read of
// data.eventpipe.model (format, resources, complete, removals, problems, project_numbers,
// drift), wholeModelQuery every rule of it, those the rules never read included; both
// add the expression link_expression names for every linking property of every resource
// that has one. (Each rule is named: OPA's type checker cannot type a reference into the
// package by a variable key, data.eventpipe.model[k], over functions whose types it
// cannot unify, and a rule undefined for a plan leaves the object undefined as before.)
const (
	modelQuery = "model := {\"format\": data.eventpipe.model.format, \"resources\": data.eventpipe.model.resources, " +
		"\"complete\": data.eventpipe.model.complete, \"removals\": data.eventpipe.model.removals, \"problems\": data.eventpipe.model.problems, " +
		"\"project_numbers\": data.eventpipe.model.project_numbers, \"drift\": data.eventpipe.model.drift}\n" + expressionsQuery
	wholeModelQuery  = "model := data.eventpipe.model\n" + expressionsQuery
	expressionsQuery = `expressions := {sprintf("%s|%s", [r.urn, p]): data.eventpipe.model.link_expression(r, p) |
	some r in data.eventpipe.model.resources
	some p in {"topic", "deadLetterPolicy", "subscription"}
	object.get(r.properties, p, null) != null
}`
)

// modelOf is the Rego model's values for a plan.
type modelOf struct {
	Model       map[string]any
	Expressions map[string]any
}

func evalModel(ctx context.Context, q rego.PreparedEvalQuery, doc map[string]any) (*modelOf, error) {
	rs, err := q.Eval(ctx, rego.EvalInput(doc))
	if err != nil {
		return nil, err
	}
	if len(rs) != 1 {
		return nil, errNoResult
	}
	b := rs[0].Bindings
	m, _ := b["model"].(map[string]any)
	e, _ := b["expressions"].(map[string]any)
	return &modelOf{Model: m, Expressions: e}, nil
}

type constError string

func (e constError) Error() string { return string(e) }

const errNoResult = constError("the model query gave no result")
