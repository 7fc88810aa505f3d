// Package budget is the consumer's one memory budget for the request bodies it reads:
// Pub/Sub pushes, the handler gateway's keyed requests and callbacks (limits.Doors). Each
// door takes what its request may hold in flight (limits.Door.Bytes of the declared body)
// before it reads the body, reads it with ReadBody, and gives the memory back once the
// request is answered. A request that does not fit beside those in flight is refused
// before its body is read, by one rule at every door: 503 Service Unavailable with
// Retry-After (Refuse). 503, not 429: the instance is out of room for the requests of
// all its clients together (RFC 9110, section 15.6.4, "temporary overload"), not this
// client over a rate of its own (429, RFC 6585); Pub/Sub retries either as a nack, and
// HTTP clients and Google's libraries retry 503. Nothing is lost: a refused push is
// delivered again, and a refused keyed request or callback reserved nothing, so its
// retry, with the same key, is processed as the first would have been.
package budget

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/eventpipe/eventpipe/consumer/limits"
)

// RetryAfter is the Retry-After of a refused request: the requests in flight hold the
// memory for as long as they take, usually well under a second.
const RetryAfter = time.Second

// Status is the status of a request refused for memory.
const Status = http.StatusServiceUnavailable

// Budget is the memory the requests in flight may hold together. A nil *Budget is no
// budget: every request fits. It is safe for concurrent use.
type Budget struct {
	sem  *semaphore.Weighted
	size int64
	held atomic.Int64
}

// New returns a budget of size bytes, raised to what one request with the largest body of
// any door may hold (limits.Doors), so that one always fits.
func New(size int64) *Budget {
	for _, d := range limits.Doors() {
		size = max(size, d.Bytes(d.MaxBody))
	}
	return &Budget{sem: semaphore.NewWeighted(size), size: size}
}

// ForMemoryLimit is the budget of an instance whose Go runtime has memoryLimit bytes
// (GOMEMLIMIT, as debug.SetMemoryLimit(-1) reports it): limits.DeliveryBudget of it. It is
// nil, no budget, when there is no limit (math.MaxInt64, GOMEMLIMIT unset).
func ForMemoryLimit(memoryLimit int64) *Budget {
	if memoryLimit == math.MaxInt64 {
		return nil
	}
	return New(limits.DeliveryBudget(memoryLimit))
}

// Size is the budget's size in bytes (0 for no budget).
func (b *Budget) Size() int64 {
	if b == nil {
		return 0
	}
	return b.size
}

// Held is what the requests in flight hold now.
func (b *Budget) Held() int64 {
	if b == nil {
		return 0
	}
	return b.held.Load()
}

// Take reserves what a request through door whose body declares declared bytes (-1:
// unknown) may hold, before its body is read. It returns the function that gives it back,
// to be called once the request is answered, or a *FullError, having reserved nothing,
// when that does not fit beside the requests in flight.
func (b *Budget) Take(door limits.Door, declared int64) (release func(), err error) {
	if b == nil {
		return func() {}, nil
	}
	n := door.Bytes(declared)
	if !b.sem.TryAcquire(n) {
		return nil, &FullError{Door: door.Name, Bytes: n, Size: b.size}
	}
	b.held.Add(n)
	return func() {
		b.held.Add(-n)
		b.sem.Release(n)
	}, nil
}

// FullError is Take's error: the requests in flight hold the budget.
type FullError struct {
	// Door names the door of the refused request.
	Door string
	// Bytes is what it would have held; Size the budget's size.
	Bytes, Size int64
}

func (e *FullError) Error() string {
	return fmt.Sprintf("the requests in flight hold the instance's memory budget for request bodies (%d bytes, GOMEMLIMIT less %d MiB): "+
		"this %s, which may hold %d bytes, is refused before its body is read and may be retried "+
		"(fix: lower the service's request concurrency or give it more memory)", e.Size, limits.BaseBytes>>20, e.Door, e.Bytes)
}

// Refuse sets the Retry-After of a request refused for memory and returns its status
// (Status), which the door writes in its own form (Pub/Sub's, a problem document, a
// callback's JSON).
func Refuse(w http.ResponseWriter) int {
	w.Header().Set("Retry-After", strconv.Itoa(int(RetryAfter/time.Second)))
	return Status
}

// firstReadBytes is the buffer a body's reading starts with.
const firstReadBytes = 64 << 10

// bodyGrowth is how much a full body buffer grows by, in times its length
// (to four times its size): a body read in full allocates its length and a
// third more, and holds a quarter more while the last growth copies.
const bodyGrowth = 3

// ReadBody reads the request body as it arrives: its buffer starts at firstReadBytes and
// grows fourfold (bodyGrowth) as it fills, up to the declared length, so a client that
// declares a large body and sends little of it holds little memory. A body over maxBytes
// fails with *http.MaxBytesError (before any is read when its declared length is).
func ReadBody(w http.ResponseWriter, r *http.Request, maxBytes int64) ([]byte, error) {
	if r.ContentLength > maxBytes {
		return nil, &http.MaxBytesError{Limit: maxBytes}
	}
	body := http.MaxBytesReader(w, r.Body, maxBytes)
	limit := maxBytes
	if r.ContentLength >= 0 {
		limit = r.ContentLength
	}
	buf := make([]byte, 0, min(limit, firstReadBytes))
	for {
		if len(buf) == cap(buf) {
			if r.ContentLength >= 0 && int64(len(buf)) == limit {
				return buf, nil // net/http's body ends at the declared length
			}
			// Past maxBytes, the next read fails with *http.MaxBytesError.
			buf = slices.Grow(buf, int(max(1, min(bodyGrowth*int64(len(buf)), limit-int64(len(buf))))))
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		switch {
		case errors.Is(err, io.EOF):
			return buf, nil
		case err != nil:
			return nil, err
		}
	}
}
