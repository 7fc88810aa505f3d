package store

// WithWriters returns base with the optional store capabilities given
// added to its method set: lw and cw, each nil where the store base wraps
// lacks it. A wrapper that adds work around a store (tracing, the test
// guard) keeps through it what the engine asks its store for, and passes
// only what the wrapped store can do.
func WithWriters(base Store, lw LatestWriter, cw ConditionalWriter) Store {
	switch {
	case lw != nil && cw != nil:
		return struct {
			Store
			LatestWriter
			ConditionalWriter
		}{base, lw, cw}
	case lw != nil:
		return struct {
			Store
			LatestWriter
		}{base, lw}
	case cw != nil:
		return struct {
			Store
			ConditionalWriter
		}{base, cw}
	}
	return base
}
