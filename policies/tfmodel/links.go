package tfmodel

// links are one planned instance's links: model_terraform_references.rego's
// terraform_links value for its address.
type links struct {
	// exact is propertyDependencies: by model property name (camelCase: topic,
	// deadLetterPolicy, subscription), the one planned instance it surely names.
	exact map[string][]string
	// possible is possibleDependencies: by model property name, the instances it may name.
	possible map[string][]string
	// dependencies are the instances exact names, sorted and distinct.
	dependencies []string
}

// links is terraform_links: the links of every planned instance with linking attributes
// that has any, by address.
func (d *document) links() map[string]links {
	panic("tfmodel: links not written yet")
}

// linkExpressions is terraform_link_expression for every planned instance with linking
// attributes and each of its linking properties, where it is defined: by address, then
// by model property name, the text a finding names when a link cannot be decided.
func (d *document) linkExpressions() map[string]map[string]string {
	panic("tfmodel: linkExpressions not written yet")
}
