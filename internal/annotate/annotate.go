// Package annotate names what the components' Annotate methods describe
// their argument and output types with: pulumi-go-provider's
// infer.Annotator itself, so the component provider (package provider)
// reads the same methods to give its schema a description of every type
// and field and the eventpipe:index:* tokens.
package annotate

import "github.com/pulumi/pulumi-go-provider/infer"

// Annotator describes a type and its fields (Describe, SetToken; the
// generated methods use no other).
type Annotator = infer.Annotator
