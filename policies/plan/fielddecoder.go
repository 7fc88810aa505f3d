package plan

import "strings"

// The typed-field side of valueDecoder: objects with known keys (the structs of the
// general path), strings, booleans and string lists, each also accepting null as
// encoding/json does.

// known numbers a key among the names a struct of the general path decodes: the index of
// key in names, -1 for another key, or -2 for a key differing from one of them only in
// case (encoding/json would match it: the fast path leaves such documents to the general
// one).
func known(key []byte, names ...string) int {
	for i, n := range names {
		if string(key) == n {
			return i
		}
	}
	for _, n := range names {
		if strings.EqualFold(string(key), n) {
			return -2
		}
	}
	return -1
}

// fields walks the object at the current position, calling fn for each key that field
// numbers with the decoder at its value; fn must consume the value. Other keys are
// skipped (checked), known keys may appear once.
func (d *valueDecoder) fields(field func(key []byte) int, fn func(f int) bool) bool {
	var seen uint64
	return d.members(func(key []byte, _ int) bool {
		f := field(key)
		switch {
		case f == -2:
			return false
		case f < 0:
			return d.skip()
		case seen&(1<<f) != 0:
			return false
		}
		seen |= 1 << f
		return fn(f)
	})
}

// isNull consumes a null at the current position.
func (d *valueDecoder) isNull() bool {
	if _, ok := d.literal("null", nil); ok {
		return true
	}
	return false
}

// optString decodes a string or null (the empty string).
func (d *valueDecoder) optString() (string, bool) {
	if d.isNull() {
		return "", true
	}
	if d.pos >= len(d.data) || d.data[d.pos] != '"' {
		return "", false
	}
	return d.goString()
}

// optBool decodes true, false or null (set == false).
func (d *valueDecoder) optBool() (v, set, ok bool) {
	switch {
	case d.isNull():
		return false, false, true
	case d.pos < len(d.data) && d.data[d.pos] == 't':
		_, ok = d.literal("true", nil)
		return true, true, ok
	default:
		_, ok = d.literal("false", nil)
		return false, true, ok
	}
}

// stringList decodes an array of strings or null.
func (d *valueDecoder) stringList() ([]string, bool) {
	if d.isNull() {
		return nil, true
	}
	list := []string{}
	ok := d.elements(func() bool {
		if d.pos >= len(d.data) || d.data[d.pos] != '"' {
			return false
		}
		s, ok := d.goString()
		list = append(list, s)
		return ok
	})
	return list, ok
}

// stringListMap decodes an object of string arrays, or null.
func (d *valueDecoder) stringListMap() (map[string][]string, bool) {
	if d.isNull() {
		return nil, true
	}
	m := map[string][]string{}
	var key string
	ok := d.members(func(k []byte, _ int) bool {
		key = string(k)
		if _, dup := m[key]; dup {
			return false
		}
		l, ok := d.stringList()
		if !ok || l == nil {
			return false
		}
		m[key] = l
		return true
	})
	return m, ok
}
