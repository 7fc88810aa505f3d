package components_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/alerts"
	"github.com/eventpipe/eventpipe/components"
	"github.com/eventpipe/eventpipe/spec"
)

// stackSetsElsewhere are the component arguments a stack file does not set
// on the pipeline itself, by type and argument name, with where it sets
// them: a Go program passes them as every pipeline's arguments.
var stackSetsElsewhere = map[string]string{
	"Consumer.storeSecret":            "a secret eventpipe:store",
	"PipelineAlerts.criticalChannels": "eventpipe:alerts.channels.critical",
	"PipelineAlerts.warningChannels":  "eventpipe:alerts.channels.warning",
	"PipelineAlerts.thresholds":       "eventpipe:alerts.thresholds",
}

// tagName is the name a struct tag gives a field ("" for none or "-").
func tagName(f reflect.StructField, key string) string {
	name, _, _ := strings.Cut(f.Tag.Get(key), ",")
	if name == "-" {
		return ""
	}
	return name
}

// base is t without pointers, and a map's or slice's element type.
func base(t reflect.Type) reflect.Type {
	for {
		switch t.Kind() {
		case reflect.Pointer, reflect.Map, reflect.Slice:
			t = t.Elem()
		default:
			return t
		}
	}
}

// structsBelow are the struct types reachable from t through fields with
// a name in the struct tag key (json: what a stack file sets; pulumi: what
// the components take).
func structsBelow(t reflect.Type, key string) []reflect.Type {
	var out []reflect.Type
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			ft := base(f.Type)
			if tagName(f, key) == "" || ft.Kind() != reflect.Struct || seen[ft] {
				continue
			}
			seen[ft] = true
			out = append(out, ft)
			walk(ft)
		}
	}
	walk(t)
	return out
}

// settingTypes are the struct types a stack file's pipeline is decoded into.
func settingTypes() []reflect.Type { return structsBelow(reflect.TypeOf(spec.Pipeline{}), "json") }

// TestEverySettingHasOneHome: each setting of a pipeline is one field of one
// type, which the stack file decodes by its json name and the components
// (and the provider's schema) take by its pulumi name, and the names agree.
// A setting added to the stack file only, or to the components only, fails
// here: it must be a field of the one type, with both names (or be listed in
// stackSetsElsewhere with where the stack file sets it).
func TestEverySettingHasOneHome(t *testing.T) {
	types := settingTypes()
	if len(types) < 7 {
		t.Fatalf("found only %v below spec.Pipeline", types)
	}
	used := map[string]bool{}
	for _, typ := range types {
		if typ.PkgPath() != reflect.TypeOf(spec.Pipeline{}).PkgPath() {
			t.Errorf("%s: a pipeline setting type outside package spec", typ)
		}
		for i := range typ.NumField() {
			f := typ.Field(i)
			key := typ.Name() + "." + tagName(f, "pulumi")
			js, pu := tagName(f, "json"), tagName(f, "pulumi")
			switch {
			case js != "" && pu != js:
				t.Errorf("%s.%s: the stack file's key %q is not the components' argument %q", typ.Name(), f.Name, js, pu)
			case js == "" && pu != "" && stackSetsElsewhere[key] == "":
				t.Errorf("%s.%s: argument %q has no stack file key; give it json:%q or list where a stack sets it", typ.Name(), f.Name, pu, pu)
			case js == "" && pu == "" && f.IsExported() && f.Tag.Get("json") != "-":
				t.Errorf("%s.%s: neither a stack file key nor an argument", typ.Name(), f.Name)
			}
			used[key] = used[key] || js == "" && pu != ""
		}
	}
	for key := range stackSetsElsewhere {
		if !used[key] {
			t.Errorf("stackSetsElsewhere lists %s, which is no argument without a stack file key", key)
		}
	}
}

// TestComponentsTakeTheSettingTypes: the components' arguments hold the
// settings as the spec types themselves (no mirror type to convert to and
// from), PipelineArgs takes every key of a stack file's pipeline under the
// same name, and every struct type reachable from the arguments is a
// spec setting type, the alert thresholds, or an argument type of the
// components that no stack file has (PushTarget).
func TestComponentsTakeTheSettingTypes(t *testing.T) {
	pipelineArgs := reflect.TypeOf(components.PipelineArgs{})
	args := map[string]reflect.StructField{}
	for i := range pipelineArgs.NumField() {
		args[tagName(pipelineArgs.Field(i), "pulumi")] = pipelineArgs.Field(i)
	}
	pipeline := reflect.TypeOf(spec.Pipeline{})
	for i := range pipeline.NumField() {
		f := pipeline.Field(i)
		name := tagName(f, "json")
		if name == "" || name == "description" { // for humans, not deployed
			continue
		}
		a, ok := args[name]
		switch {
		case !ok:
			t.Errorf("spec.Pipeline.%s (%s): PipelineArgs has no argument %q", f.Name, name, name)
		case base(a.Type) != base(f.Type):
			t.Errorf("PipelineArgs.%s is %s, the stack file's %s is %s: the same setting in two types", a.Name, a.Type, name, f.Type)
		}
	}
	for _, c := range []struct {
		args  any
		field string
		want  any
	}{
		{components.TopicArgs{}, "Topic", spec.Topic{}},
		{components.ConsumerArgs{}, "Consumer", spec.Consumer{}},
		{components.SubscriptionArgs{}, "Subscription", spec.Subscription{}},
	} {
		if f, _ := reflect.TypeOf(c.args).FieldByName(c.field); base(f.Type) != reflect.TypeOf(c.want) {
			t.Errorf("%T.%s is %s, want %T", c.args, c.field, f.Type, c.want)
		}
	}
	allowed := map[reflect.Type]bool{reflect.TypeOf(components.PushTarget{}): true}
	for _, typ := range settingTypes() {
		allowed[typ] = true
	}
	alertsPkg := reflect.TypeOf(alerts.Config{}).PkgPath()
	for _, a := range []any{components.PipelineArgs{}, components.TopicArgs{}, components.ConsumerArgs{}, components.SubscriptionArgs{}, components.FirestoreTTLArgs{}} {
		for _, typ := range structsBelow(reflect.TypeOf(a), "pulumi") {
			if !allowed[typ] && typ.PkgPath() != alertsPkg {
				t.Errorf("%T takes %s: a settings type of its own beside the spec types", a, typ)
			}
		}
	}
}
