package devpipe

import (
	"bytes"
	"sync"
)

// LineWriter is an io.Writer that calls a function with each complete line
// written to it (without the newline), however the writes split the lines.
// It is safe for concurrent use.
type LineWriter struct {
	mu   sync.Mutex
	fn   func(line []byte)
	part []byte
}

// NewLineWriter returns a LineWriter calling fn; fn must not keep the slice.
func NewLineWriter(fn func(line []byte)) *LineWriter { return &LineWriter{fn: fn} }

// Write implements io.Writer.
func (lw *LineWriter) Write(p []byte) (int, error) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	lw.part = append(lw.part, p...)
	for {
		i := bytes.IndexByte(lw.part, '\n')
		if i < 0 {
			return len(p), nil
		}
		lw.fn(lw.part[:i])
		lw.part = lw.part[i+1:]
	}
}
