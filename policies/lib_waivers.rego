package eventpipe.lib

import rego.v1

# config.waivers suppress findings: each {rule: id, urn: URN or pattern (* any run of
# characters, ? one character), reason, expires: YYYY-MM-DD}, honoured through its expiry
# date (config.today, default today in UTC).

default waivers := []

waivers := config.waivers if is_array(config.waivers)

today := config.today if is_string(config.today)

else := time.format([time.now_ns(), "UTC", "2006-01-02"])

valid_waiver(w) if {
	known_string(w.rule)
	known_string(w.urn)
	is_string(w.reason)
	trim_space(w.reason) != ""
	is_string(w.expires)
	regex.match(`^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$`, w.expires)
}

# live_waivers are the valid waivers not yet expired, each with its URN pattern as a regex.
live_waivers := [object.union(w, {"pattern": urn_pattern(w.urn)}) |
	some w in waivers
	valid_waiver(w)
	w.expires >= today
]

urn_pattern(p) := concat("", ["^", strings.replace_n(pattern_escapes, p), "$"])

pattern_escapes := {
	"*": ".*", "?": ".", "\\": "\\\\", ".": "\\.", "+": "\\+", "(": "\\(", ")": "\\)", "[": "\\[",
	"]": "\\]", "{": "\\{", "}": "\\}", "^": "\\^", "$": "\\$", "|": "\\|",
}

# waiver_of(f) is the first live waiver covering finding f.
waiver_of(f) := ws[0] if {
	ws := [w | some w in live_waivers; w.rule == f.id; regex.match(w.pattern, f.urn)]
	count(ws) > 0
}

# waiver_problems pairs the URN pattern of each expired or invalid waiver with what is wrong.
waiver_problems contains [object.get(w, "urn", ""), text] if {
	some i, w in waivers
	not valid_waiver(w)
	text := sprintf(
		"waivers[%d] is invalid: a waiver needs rule (a rule id such as EP005), urn (a URN or a pattern with *), %s",
		[i, "a reason and expires (a date, YYYY-MM-DD)"],
	)
}

waiver_problems contains [w.urn, text] if {
	some w in waivers
	valid_waiver(w)
	w.expires < today
	text := sprintf("the waiver of %s for %s expired on %s (reason given: %s)", [w.rule, w.urn, w.expires, w.reason])
}
