package tfmodel

import "strings"

// camelReplacer replaces every "_x" (x a lower-case letter or a digit) by x in upper case,
// in one pass: model_terraform_values.rego's camel_replacements, applied by
// strings.replace_n (which is strings.NewReplacer over the sorted patterns).
var camelReplacer = func() *strings.Replacer {
	const chars = "abcdefghijklmnopqrstuvwxyz0123456789"
	pairs := make([]string, 0, 2*len(chars))
	for _, c := range chars {
		pairs = append(pairs, "_"+string(c), strings.ToUpper(string(c)))
	}
	return strings.NewReplacer(pairs...)
}()

// camelCase is model_terraform_values.rego's camel_case: snake_case to camelCase by one
// replacement of every "_x" by "X" ("a__b" is "a_B", "a_1" is "a1"); a name without "_"
// is its own.
func camelCase(s string) string {
	if !strings.Contains(s, "_") {
		return s
	}
	return camelReplacer.Replace(s)
}
