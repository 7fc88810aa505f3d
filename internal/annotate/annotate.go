// Package annotate declares what the components' Annotate methods describe
// their argument and output types with: the part of pulumi-go-provider's
// infer.Annotator they use, with the same method signatures. A component
// provider built with that library turns Annotator into an alias of
// infer.Annotator, and the same methods then give its schema a description
// of every type and field and the eventpipe:index:* tokens.
package annotate

import "github.com/pulumi/pulumi/sdk/v3/go/common/tokens"

// Annotator describes a type and its fields.
type Annotator interface {
	// Describe gives the type (i is the receiver) or one of its fields (i
	// points to the field) a description.
	Describe(i any, description string)
	// SetToken sets the type's schema token, module:name in the provider's package.
	SetToken(module tokens.ModuleName, name tokens.TypeName)
}
