package plan

import (
	"bytes"
	"runtime"
	"sync"
	"sync/atomic"
)

// minPerWorker is the least number of elements worth a goroutine: a small plan is
// decoded on the calling goroutine alone.
const minPerWorker = 64

// segmentsPerWorker is how many segments each worker gets on average: more segments
// balance the work when a processor is busy with something else.
const segmentsPerWorker = 8

// decodeArray decodes each element of the JSON array at data[pos] with fn, which decodes
// the value at the decoder's position, and returns the results in order and the offset
// after the array. ok is false if the array is malformed or fn fails for an element.
//
// The first elements are decoded on this goroutine; an array of fewer than minPerWorker
// elements ends there. The rest of a larger one is decoded on every processor at once,
// in segments that start where the text that separates the first two elements (a comma,
// the same indentation and the same first key) appears again: each segment is decoded
// element by element and must end exactly where the next one starts, or at the array's
// end, which checks the guesses (a segment guessed past the array's end is dropped). When
// the guesses fail, or the elements are not alike, the rest is decoded here.
func decodeArray[T any](data []byte, pos int, fn func(d *valueDecoder, out *T) bool) (results []T, end int, ok bool) {
	if pos >= len(data) || data[pos] != '[' {
		return nil, 0, false
	}
	d := newValueDecoder()
	d.reset(data)
	d.pos = pos + 1
	d.skipSpace()
	if d.pos < len(data) && data[d.pos] == ']' {
		return nil, d.pos + 1, true
	}
	workers := runtime.GOMAXPROCS(0)
	second := -1 // offset of the comma before the second element
	for {
		var out T
		if !fn(d, &out) {
			return nil, 0, false
		}
		results = append(results, out)
		d.skipSpace()
		if d.pos >= len(data) {
			return nil, 0, false
		}
		c := data[d.pos]
		d.pos++
		if c == ']' {
			return results, d.pos, true
		}
		if c != ',' {
			return nil, 0, false
		}
		if len(results) == 1 {
			second = d.pos - 1
		}
		if len(results) == minPerWorker && workers > 1 {
			perElement := (d.pos - pos) / minPerWorker
			if rest, end, ok := decodeSegments(data, elementSignature(data[second:]), d.pos, workers, perElement, fn); ok {
				return append(results, rest...), end, true
			}
		}
	}
}

// elementSignature returns the text from the comma at text[0] to the colon after the
// first key of the object that follows, e.g. ",\n    {\n        \"op\":", or nil if no
// object follows.
func elementSignature(text []byte) []byte {
	i := 1
	for i < len(text) && isSpace(text[i]) {
		i++
	}
	if i >= len(text) || text[i] != '{' {
		return nil
	}
	i++
	for i < len(text) && isSpace(text[i]) {
		i++
	}
	if i >= len(text) || text[i] != '"' {
		return nil
	}
	i = skipString(text, i)
	for i < len(text) && isSpace(text[i]) {
		i++
	}
	if i >= len(text) || text[i] != ':' {
		return nil
	}
	return text[:i+1]
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

// decodeSegments decodes the rest of an array, from rest on, in segments guessed by the
// elements' signature sig; see decodeArray. perElement, the first elements' average
// length, sizes each segment's results.
func decodeSegments[T any](data, sig []byte, rest, workers, perElement int, fn func(d *valueDecoder, out *T) bool) ([]T, int, bool) {
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
	segs := make([]segment[T], len(starts))
	for k, s := range starts {
		segs[k] = segment[T]{start: s, next: -1}
		if k+1 < len(starts) {
			segs[k].next = starts[k+1]
			segs[k].out = make([]T, 0, (starts[k+1]-s)/max(perElement, 1)+8)
		}
	}
	var (
		claim atomic.Int64
		// closed is the first segment found to end the array: the ones after it were
		// guessed past its end and are left, or abandoned.
		closed atomic.Int64
		wg     sync.WaitGroup
	)
	closed.Store(int64(len(segs)))
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := newValueDecoder()
			for {
				k := int(claim.Add(1)) - 1
				if k >= len(segs) || int64(k) > closed.Load() {
					return
				}
				decodeSegment(d, data, &segs[k], fn, func() bool { return int64(k) > closed.Load() })
				if segs[k].closed {
					for c := closed.Load(); int64(k) < c && !closed.CompareAndSwap(c, int64(k)); c = closed.Load() {
					}
				}
			}
		}()
	}
	wg.Wait()
	count, last := 0, -1
	for k := range segs {
		sg := &segs[k]
		if !sg.ok {
			return nil, 0, false
		}
		count += len(sg.out)
		if sg.closed {
			last = k
			break
		}
		if sg.end != sg.next {
			return nil, 0, false
		}
	}
	if last < 0 {
		return nil, 0, false
	}
	results := make([]T, 0, count)
	for k := 0; k <= last; k++ {
		results = append(results, segs[k].out...)
	}
	return results, segs[last].end, true
}

// decodeSegment decodes the elements of one segment: it ends where the next segment
// starts, or at the array's ']', or early (not ok) once abandoned reports true.
func decodeSegment[T any](d *valueDecoder, data []byte, sg *segment[T], fn func(d *valueDecoder, out *T) bool, abandoned func() bool) {
	d.reset(data[sg.start:])
	if sg.next > sg.start {
		d.text = string(data[sg.start:sg.next])
	}
	for !abandoned() {
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
