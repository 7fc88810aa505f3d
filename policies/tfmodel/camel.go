package tfmodel

import "strings"

// camelCaser turns snake_case into camelCase as model_terraform_values.rego's camel_case
// does: every "_x" (x a lowercase letter or digit) becomes "X", left to right.
var camelCaser = func() *strings.Replacer {
	var pairs []string
	for _, c := range "abcdefghijklmnopqrstuvwxyz0123456789" {
		pairs = append(pairs, "_"+string(c), strings.ToUpper(string(c)))
	}
	return strings.NewReplacer(pairs...)
}()

// camelCase is s in camelCase (model_terraform_values.rego's camel_case).
func camelCase(s string) string {
	if !strings.Contains(s, "_") {
		return s
	}
	return camelCaser.Replace(s)
}
