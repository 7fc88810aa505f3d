package plan

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// cutter cuts a JSON array into its elements in one pass that only tracks strings and
// nesting. It does not validate: whoever decodes an element decodes it strictly and
// exactly to its end, which validates the array as a whole (an empty element, a missing
// comma or garbage between elements fails there).
type cutter struct {
	data  []byte
	i     int // next byte to look at
	count int // elements cut so far
	done  bool
}

// newCutter starts cutting the array at data[pos], which must be '['.
func newCutter(data []byte, pos int) (*cutter, bool) {
	if pos >= len(data) || data[pos] != '[' {
		return nil, false
	}
	return &cutter{data: data, i: pos + 1}, true
}

// next returns the next element (with the whitespace around it); more is false after the
// last one, ok false for an array that does not end.
func (c *cutter) next() (elem []byte, more, ok bool) {
	if c.done {
		return nil, false, true
	}
	data := c.data
	start, depth, blank := c.i, 0, true
	for i := start; i < len(data); i++ {
		switch data[i] {
		case ' ', '\n', '\t', '\r':
			for i+9 <= len(data) && spaces8(data, i+1) {
				i += 8
			}
			continue
		case '"':
			i = skipString(data, i) - 1
			if i >= len(data)-1 {
				return nil, false, false
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth > 0 {
				depth--
				break
			}
			if data[i] != ']' {
				return nil, false, false
			}
			c.i, c.done = i+1, true
			if blank && c.count == 0 { // []
				return nil, false, true
			}
			c.count++
			return data[start:i], true, true
		case ',':
			if depth == 0 {
				c.i = i + 1
				c.count++
				return data[start:i], true, true
			}
		}
		blank = false
	}
	return nil, false, false
}

// minPerWorker is the least number of elements worth a goroutine: a small plan is
// decoded on the calling goroutine alone.
const minPerWorker = 64

// batchSize is how many elements are handed to a worker at a time.
const batchSize = 32

// batch is a run of consecutive elements and their decoded results.
type batch[T any] struct {
	elems [][]byte
	out   []T
}

// decodeArray decodes each element of the JSON array at data[pos] with fn and returns the
// results in order and the offset after the array. The array is cut on this goroutine
// while up to GOMAXPROCS workers, each with its own decoder, decode the batches already
// cut; an array of fewer than minPerWorker elements is decoded here alone. ok is false if
// the array does not end or fn fails for an element (the other elements are then left).
func decodeArray[T any](data []byte, pos int, fn func(d *valueDecoder, elem []byte, out *T) bool) (results []T, end int, ok bool) {
	c, ok := newCutter(data, pos)
	if !ok {
		return nil, 0, false
	}
	first := make([][]byte, 0, minPerWorker)
	for len(first) < minPerWorker {
		elem, more, ok := c.next()
		if !ok {
			return nil, 0, false
		}
		if !more {
			break
		}
		first = append(first, elem)
	}
	workers := runtime.GOMAXPROCS(0)
	if c.done || workers == 1 {
		// Small or one processor: cut the rest and decode everything here.
		for !c.done {
			elem, more, ok := c.next()
			if !ok {
				return nil, 0, false
			}
			if more {
				first = append(first, elem)
			}
		}
		d := newValueDecoder()
		results = make([]T, len(first))
		for i, elem := range first {
			if !fn(d, elem, &results[i]) {
				return nil, 0, false
			}
		}
		return results, c.i, true
	}
	var (
		failed  atomic.Bool
		wg      sync.WaitGroup
		batches []*batch[T]
	)
	queue := make(chan *batch[T], 64)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := newValueDecoder()
			for b := range queue {
				if failed.Load() {
					continue
				}
				b.out = make([]T, len(b.elems))
				for i, elem := range b.elems {
					if !fn(d, elem, &b.out[i]) {
						failed.Store(true)
						break
					}
				}
			}
		}()
	}
	send := func(elems [][]byte) {
		b := &batch[T]{elems: elems}
		batches = append(batches, b)
		queue <- b
	}
	for i := 0; i < len(first); i += batchSize {
		send(first[i:min(i+batchSize, len(first))])
	}
	cutOK := true
	for !c.done && cutOK && !failed.Load() {
		elems := make([][]byte, 0, batchSize)
		for len(elems) < batchSize {
			elem, more, ok := c.next()
			if !ok {
				cutOK = false
				break
			}
			if !more {
				break
			}
			elems = append(elems, elem)
		}
		if len(elems) > 0 {
			send(elems)
		}
	}
	close(queue)
	wg.Wait()
	if !cutOK || failed.Load() {
		return nil, 0, false
	}
	results = make([]T, 0, c.count)
	for _, b := range batches {
		results = append(results, b.out...)
	}
	return results, c.i, true
}
