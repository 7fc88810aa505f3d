package plan

import (
	"bytes"
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

// segmentsPerWorker is how many segments each worker gets on average: more segments
// balance the work when a processor is busy with something else.
const segmentsPerWorker = 8

// batchSize is how many elements are handed to a worker at a time when the array is cut
// on the calling goroutine.
const batchSize = 32

// decodeArray decodes each element of the JSON array at data[pos] with fn, which decodes
// the value at the decoder's position, and returns the results in order and the offset
// after the array. ok is false if the array is malformed or fn fails for an element.
//
// An array of fewer than minPerWorker elements is decoded on this goroutine. A larger one
// is decoded on every processor at once, in segments that start where the text that
// separates the first two elements (a comma, the same indentation and the same first key)
// appears again: each segment is decoded element by element and must end exactly where
// the next one starts, or at the array's end, which checks the guesses (a segment guessed
// past the array's end is dropped). When the guesses fail, or the elements are not alike,
// the array is cut on this goroutine and the workers decode what it has cut.
func decodeArray[T any](data []byte, pos int, fn func(d *valueDecoder, out *T) bool) (results []T, end int, ok bool) {
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
			if !decodeElement(d, elem, fn, &results[i]) {
				return nil, 0, false
			}
		}
		return results, c.i, true
	}
	if results, end, ok := decodeSegments(data, first, c.i, workers, fn); ok {
		return results, end, true
	}
	return decodeCut(c, first, workers, fn)
}

// decodeElement decodes one element cut out of its array.
func decodeElement[T any](d *valueDecoder, elem []byte, fn func(d *valueDecoder, out *T) bool, out *T) bool {
	d.resetElement(elem)
	return fn(d, out) && d.atEnd()
}

// segment is a run of elements decoded by one worker: from start up to next (the start
// of the following segment), or to the end of the array.
type segment[T any] struct {
	start, next int
	out         []T
	end         int  // offset after the last element decoded
	closed      bool // the array ended in this segment; end is after its ']'
	ok          bool
}

// elementSignature returns the text that precedes the second element of an array, from
// the comma to the colon after the element's first key, e.g. ",\n    {\n        \"op\":".
func elementSignature(second []byte) []byte {
	i := 0
	for i < len(second) && isSpace(second[i]) {
		i++
	}
	if i >= len(second) || second[i] != '{' {
		return nil
	}
	i++
	for i < len(second) && isSpace(second[i]) {
		i++
	}
	if i >= len(second) || second[i] != '"' {
		return nil
	}
	i = skipString(second, i)
	for i < len(second) && isSpace(second[i]) {
		i++
	}
	if i >= len(second) || second[i] != ':' {
		return nil
	}
	return append([]byte{','}, second[:i+1]...)
}

// decodeSegments decodes the first elements (already cut) and the rest of the array,
// from rest on, in segments guessed by the elements' signature; see decodeArray.
func decodeSegments[T any](data []byte, first [][]byte, rest, workers int, fn func(d *valueDecoder, out *T) bool) ([]T, int, bool) {
	sig := elementSignature(first[1])
	if sig == nil {
		return nil, 0, false
	}
	// Guess segment starts spread over the rest of the document; those past the array's
	// end are found out and dropped.
	n := workers * segmentsPerWorker
	starts := []int{rest}
	for k := 1; k < n; k++ {
		target := max(rest+k*(len(data)-rest)/n, starts[len(starts)-1]+1)
		if target >= len(data) {
			break
		}
		j := bytes.Index(data[target:], sig)
		if j < 0 {
			break
		}
		if s := target + j + 1; s > starts[len(starts)-1] {
			starts = append(starts, s)
		}
	}
	segs := make([]segment[T], len(starts)+1)
	segs[0] = segment[T]{start: -1} // the elements already cut
	for k, s := range starts {
		segs[k+1] = segment[T]{start: s, next: -1}
		if k+1 < len(starts) {
			segs[k+1].next = starts[k+1]
		}
	}
	var (
		claim atomic.Int64
		wg    sync.WaitGroup
	)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := newValueDecoder()
			for {
				k := int(claim.Add(1)) - 1
				if k >= len(segs) {
					return
				}
				if k == 0 {
					segs[0].out = make([]T, len(first))
					segs[0].ok = true
					for i, elem := range first {
						if !decodeElement(d, elem, fn, &segs[0].out[i]) {
							segs[0].ok = false
							break
						}
					}
					continue
				}
				decodeSegment(d, data, &segs[k], fn)
			}
		}()
	}
	wg.Wait()
	if !segs[0].ok {
		return nil, 0, false
	}
	count := len(segs[0].out)
	last := len(segs) - 1
	for k := 1; k < len(segs); k++ {
		sg := &segs[k]
		if !sg.ok {
			return nil, 0, false
		}
		count += len(sg.out)
		if sg.closed {
			last = k
			break
		}
		if k == len(segs)-1 || sg.end != sg.next {
			return nil, 0, false
		}
	}
	results := make([]T, 0, count)
	for k := 0; k <= last; k++ {
		results = append(results, segs[k].out...)
	}
	return results, segs[last].end, true
}

// decodeSegment decodes the elements of one segment: it ends where the next segment
// starts, or at the array's ']'.
func decodeSegment[T any](d *valueDecoder, data []byte, sg *segment[T], fn func(d *valueDecoder, out *T) bool) {
	d.reset(data[sg.start:])
	if sg.next > sg.start {
		d.text = string(data[sg.start:sg.next])
	}
	for {
		var out T
		if !fn(d, &out) {
			return
		}
		sg.out = append(sg.out, out)
		d.skipSpace()
		if d.pos >= len(d.data) {
			return
		}
		c := d.data[d.pos]
		d.pos++
		if c == ']' {
			sg.end, sg.closed, sg.ok = sg.start+d.pos, true, true
			return
		}
		if c != ',' {
			return
		}
		if sg.next >= 0 && sg.start+d.pos >= sg.next {
			sg.end, sg.ok = sg.start+d.pos, true
			return
		}
	}
}

// decodeCut cuts the rest of the array on this goroutine while the workers decode the
// batches already cut.
func decodeCut[T any](c *cutter, first [][]byte, workers int, fn func(d *valueDecoder, out *T) bool) (results []T, end int, ok bool) {
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
					if !decodeElement(d, elem, fn, &b.out[i]) {
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

// batch is a run of consecutive elements and their decoded results.
type batch[T any] struct {
	elems [][]byte
	out   []T
}
