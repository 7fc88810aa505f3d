// Package downstream makes the one kind of call the consumer makes for an
// effect outside its store: an HTTP request to a handler (the team's
// container, or a lease route's own URL) for one key, carrying the key's
// Idempotency-Key and attempt number. Every door uses it: Pub/Sub
// deliveries, callbacks and the Idempotency-Key gateway.
//
// Its answer decides the key by one table (VerdictOf, docs/handlers.md):
// 2xx done; 408, 425, 429 and 5xx retried; any other status refused for
// good. A call is never made twice at once for one key: one whose answer
// is late (Call.Timeout) is not abandoned but keeps running, its
// reservation extended, until it ends on the handler's side or its bound
// (Call.Bound) passes, and its answer then settles the key (Call.Late).
// A call whose request may have reached the handler but which got no
// answer is in doubt (Unknown); one cut by the consumer's own shutdown
// or fenced by a takeover is Abandoned, and its key left as it is.
package downstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eventpipe/eventpipe/consumer/classify"
)

// Headers of every call.
const (
	// IdempotencyKeyHeader carries the key: the same on every attempt.
	IdempotencyKeyHeader = "Idempotency-Key"
	// AttemptHeader carries the attempt number of the call for its key,
	// from 1: a number above 1 tells the handler an earlier call with the
	// key was made (docs/handlers.md says when its effect is unknown).
	AttemptHeader = "Eventpipe-Attempt"
)

// Verdict is what a call's end means for its key.
type Verdict string

// The verdicts: the answer table (docs/handlers.md, "The answer table"),
// and the two ends without an answer.
const (
	// Done: 2xx. The effect happened: the key is completed, its answer
	// kept and replayed; the handler is not called again.
	Done Verdict = "done"
	// Refused: 1xx, 3xx, or a 4xx other than 408, 425 and 429. A final
	// refusal: the key is rejected, its answer kept and replayed; the
	// handler is not called again.
	Refused Verdict = "refused"
	// Retry: 408, 425, 429 or 5xx, or a request that never reached the
	// handler (refused connection). Nothing durable happened: the key is
	// released and the next attempt calls again.
	Retry Verdict = "retry"
	// Unknown: the request may have reached the handler and no answer
	// came: the connection was lost, or the call ran past its bound and
	// was cut. The key is released in doubt: the next attempt calls again.
	Unknown Verdict = "unknown"
	// Abandoned: the consumer cut the call itself — it is shutting down,
	// or the key was taken over (fenced). The key is left as it is: held
	// until its reservation lapses, or the taker's.
	Abandoned Verdict = "abandoned"
)

// VerdictOf is the answer table: the verdict of an answer with status.
func VerdictOf(status int) Verdict {
	switch {
	case status >= 200 && status < 300:
		return Done
	case status >= 500, status == http.StatusRequestTimeout, status == http.StatusTooEarly, status == http.StatusTooManyRequests:
		return Retry
	default:
		return Refused
	}
}

// Answer is how one call ended.
type Answer struct {
	Verdict Verdict
	// Status, Header and Head are the handler's answer, when it gave one
	// (Done, Refused, and Retry by status): Head is the start of its body,
	// at most Call.MaxBody+1 bytes.
	Status int
	Header http.Header
	Head   []byte
	// Cut says the body could not be read to its end (or to the bound):
	// Head is only what arrived. The status still decides.
	Cut bool
	// Err says why it is not Done, classified (classify.Poison for a
	// refusal, classify.Transient otherwise).
	Err error
	// Took is how long the call ran.
	Took time.Duration
}

// Call is one call for one key.
type Call struct {
	// Method is the request's method (default POST); URL its target.
	Method, URL string
	// Header holds extra request headers (the gateway's: the client's).
	Header http.Header
	// Body is the request body (sent as JSON unless Header sets a type).
	Body []byte
	// Key is the Idempotency-Key; Attempt the attempt number.
	Key     string
	Attempt int64
	// MaxBody bounds the answer's body kept in Answer.Head.
	MaxBody int
	// Timeout is how long the door waits for the answer (its own caller
	// then hears "retry later"); the call itself runs on until Bound.
	Timeout time.Duration
	// Bound is how long the call may run in all (0: Timeout; the doors
	// give at least Timeout): past it the call is cut, in doubt.
	Bound time.Duration
	// Heartbeat and Extend keep the key's reservation while the call
	// runs: Extend is called every Heartbeat; an error (the reservation
	// was taken over) cuts the call, Abandoned.
	Heartbeat time.Duration
	Extend    func(ctx context.Context) error
	// Late receives the Answer of a call that outlived Timeout (or its
	// door's context), when it ends. It runs on its own goroutine and is
	// counted by Caller.Wait.
	Late func(Answer)
}

// ErrLate is what Do and RoundTrip return when the call had not ended
// after Call.Timeout (or when the door's context ended first): it runs on
// and Call.Late gets its answer.
var ErrLate = errors.New("the handler has not answered yet; the call runs on, and its answer will settle the key")

// Caller makes calls. The zero value is not usable; use New.
type Caller struct {
	client *http.Client
	// cut ends every call still running (the shutdown deadline).
	cut context.Context
	// running counts the calls running; idle is closed while none runs
	// (a call may start while the drain waits: no sync.WaitGroup).
	mu      sync.Mutex
	running int
	idle    chan struct{}
}

// New returns a Caller using client (a plain client when nil), which
// follows no redirect: a 3xx is an answer (Refused), and a redirected POST
// would reach another URL without its body. cut, when not nil, cuts every
// call still running when it is done: calls cut so end Abandoned (the
// consumer's shutdown deadline).
func New(client *http.Client, cut context.Context) *Caller {
	own := http.Client{}
	if client != nil {
		own = *client
	}
	own.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	client = &own
	if cut == nil {
		cut = context.Background()
	}
	idle := make(chan struct{})
	close(idle)
	return &Caller{client: client, cut: cut, idle: idle}
}

// started counts a call that starts.
func (c *Caller) started() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running == 0 {
		c.idle = make(chan struct{})
	}
	c.running++
}

// ended counts a call that ended.
func (c *Caller) ended() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running--; c.running == 0 {
		close(c.idle)
	}
}

// Wait waits until no call runs (the drain of a shutdown) or ctx ends,
// and reports whether none runs.
func (c *Caller) Wait(ctx context.Context) bool {
	for {
		c.mu.Lock()
		idle := c.idle
		c.mu.Unlock()
		select {
		case <-idle:
			c.mu.Lock()
			none := c.running == 0
			c.mu.Unlock()
			if none {
				return true
			}
		case <-ctx.Done():
			return false
		}
	}
}

// flight is a call's end as the transport saw it.
type flight struct {
	resp *http.Response
	err  error
	// sent says the request's headers were written: the handler may have
	// received it.
	sent bool
	took time.Duration
}

// launched is a running call.
type launched struct {
	ended chan flight
	// end stops the heartbeat and ends the call's context; stopHB only
	// the heartbeat.
	end, stopHB func()
	fenced      atomic.Bool
	started     time.Time
}

// launch starts call on its own context, bounded by c.Bound and the
// caller's cut, detached from ctx's cancellation (its values kept), with
// the heartbeat running; send makes the request.
func (c *Caller) launch(ctx context.Context, call Call, send func(ctx context.Context) (*http.Response, error)) *launched {
	c.started()
	bound := call.Bound
	if bound <= 0 {
		bound = call.Timeout
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bound)
	stopCut := context.AfterFunc(c.cut, cancel)
	l := &launched{ended: make(chan flight, 1), started: time.Now()}
	var sent bool
	var mu sync.Mutex
	traced := httptrace.WithClientTrace(cctx, &httptrace.ClientTrace{WroteHeaders: func() { mu.Lock(); sent = true; mu.Unlock() }})
	hbDone := make(chan struct{})
	var hbOnce sync.Once
	l.stopHB = func() { hbOnce.Do(func() { close(hbDone) }) }
	if call.Extend != nil && call.Heartbeat > 0 {
		go func() {
			t := time.NewTicker(call.Heartbeat)
			defer t.Stop()
			for {
				select {
				case <-hbDone:
					return
				case <-cctx.Done():
					return
				case <-t.C:
					if err := call.Extend(cctx); err != nil && isFenced(err) {
						l.fenced.Store(true)
						cancel()
						return
					}
				}
			}
		}()
	}
	var endOnce sync.Once
	l.end = func() {
		endOnce.Do(func() {
			l.stopHB()
			stopCut()
			cancel()
			c.ended()
		})
	}
	go func() {
		resp, err := send(traced)
		mu.Lock()
		f := flight{resp: resp, err: err, sent: sent, took: time.Since(l.started)}
		mu.Unlock()
		l.ended <- f
	}()
	return l
}

// isFenced reports the engine's error for a reservation taken over (code
// FENCED).
func isFenced(err error) bool {
	return classify.Of(err).Code == "FENCED"
}

// answer reads f's response (head up to maxBody+1 bytes, the rest drained
// up to 1 MiB so the connection can be reused) and decides its verdict.
func (c *Caller) answer(l *launched, call Call, f flight) Answer {
	if f.err != nil {
		return c.noAnswer(l, call, f)
	}
	a := Answer{Took: f.took}
	defer f.resp.Body.Close()
	head, rerr := io.ReadAll(io.LimitReader(f.resp.Body, int64(max(call.MaxBody, snippetBytes))+1))
	_, _ = io.Copy(io.Discard, io.LimitReader(f.resp.Body, 1<<20))
	a.Status, a.Header, a.Cut = f.resp.StatusCode, f.resp.Header, rerr != nil
	a.Head = head[:min(len(head), call.MaxBody+1)]
	a.Verdict, a.Err = judge(call, a.Status, head)
	return a
}

// judge applies the answer table to status, with the error that says
// why the answer is not Done.
func judge(call Call, status int, head []byte) (Verdict, error) {
	v := VerdictOf(status)
	snippet := head[:min(len(head), snippetBytes)]
	switch v {
	case Retry:
		return v, classify.Transient(fmt.Errorf("%s %s: HTTP %d: %s", method(call), call.URL, status, snippet), strconv.Itoa(status))
	case Refused:
		return v, classify.Poison(fmt.Errorf("%s %s: HTTP %d (refused for good; fix the route's fields or the receiver): %s", method(call), call.URL, status, snippet))
	}
	return v, nil
}

// noAnswer is the Answer of a call that ended without one.
func (c *Caller) noAnswer(l *launched, call Call, f flight) Answer {
	a := Answer{Took: f.took}
	code := "UNAVAILABLE"
	switch {
	case l.fenced.Load():
		a.Verdict = Abandoned
		code = "FENCED"
	case c.cut.Err() != nil:
		a.Verdict = Abandoned
		code = "CANCELLED"
	case !f.sent:
		a.Verdict = Retry // it never reached the handler
	case errors.Is(f.err, context.DeadlineExceeded):
		a.Verdict, code = Unknown, "DEADLINE_EXCEEDED"
	default:
		a.Verdict = Unknown
	}
	a.Err = classify.Transient(fmt.Errorf("%s %s (attempt %d, %s): %w", method(call), call.URL, call.Attempt, a.Verdict, f.err), code)
	return a
}

func method(call Call) string {
	if call.Method == "" {
		return http.MethodPost
	}
	return call.Method
}

// snippetBytes is how much of a refused answer's body an error quotes.
const snippetBytes = 512

// Do makes call and returns its Answer once it ends, or ErrLate when it
// has not ended after call.Timeout or when ctx ends first: the call runs
// on (bounded by call.Bound) and call.Late gets its Answer.
//
// The request is never sent twice by the transport: Go's transport resends
// a request with an Idempotency-Key on its own when a reused connection
// fails after it was written, unless the request's body cannot be rewound
// (net/http: Request.isReplayable, persistConn.shouldRetryRequest), so the
// body here cannot be.
func (c *Caller) Do(ctx context.Context, call Call) (Answer, error) {
	l := c.launch(ctx, call, func(cctx context.Context) (*http.Response, error) {
		req, err := http.NewRequestWithContext(cctx, method(call), call.URL, bytes.NewReader(call.Body))
		if err != nil {
			return nil, err
		}
		req.GetBody = nil // not replayable: see Do
		for k, vs := range call.Header {
			req.Header[k] = vs
		}
		if req.Header.Get("Content-Type") == "" {
			req.Header.Set("Content-Type", "application/json")
		}
		setKeyHeaders(req.Header, call)
		return c.client.Do(req)
	})
	f, ok := c.wait(ctx, l, call)
	if !ok {
		return Answer{}, ErrLate
	}
	a := c.answer(l, call, f)
	l.end()
	return a, nil
}

// setKeyHeaders sets the key and attempt headers of call.
func setKeyHeaders(h http.Header, call Call) {
	if call.Key != "" {
		h.Set(IdempotencyKeyHeader, call.Key)
	}
	h.Set(AttemptHeader, strconv.FormatInt(max(call.Attempt, 1), 10))
}

// wait waits for l's end for call.Timeout, or until ctx ends. ok false
// means it did not end: the call runs on, and its Answer goes to
// call.Late when it ends.
func (c *Caller) wait(ctx context.Context, l *launched, call Call) (f flight, ok bool) {
	timer := time.NewTimer(call.Timeout)
	defer timer.Stop()
	select {
	case f := <-l.ended:
		return f, true
	case <-timer.C:
	case <-ctx.Done():
	}
	go func() {
		a := c.answer(l, call, <-l.ended)
		if call.Late != nil {
			call.Late(a)
		}
		l.end()
	}()
	return flight{}, false
}

// CallError is RoundTrip's error for a call that ended without an
// answer: its Answer says how.
type CallError struct{ Answer Answer }

// Error implements error.
func (e *CallError) Error() string { return e.Answer.Err.Error() }

// Unwrap returns the answer's error.
func (e *CallError) Unwrap() error { return e.Answer.Err }

// RoundTrip makes call with req through rt (a reverse proxy's transport:
// the gateway's), with the key's headers set (the Idempotency-Key is the
// client's, already on req), and returns the handler's response with its
// body unread once it arrives, or a *CallError for a call that ended
// without one, or ErrLate as Do. The response's body must be closed: that
// ends the call. req must not be replayable (the reverse proxy's outgoing
// request of a server request is not: it has no GetBody).
func (c *Caller) RoundTrip(rt http.RoundTripper, req *http.Request, call Call) (*http.Response, error) {
	call.Method, call.URL = req.Method, req.URL.String()
	l := c.launch(req.Context(), call, func(cctx context.Context) (*http.Response, error) {
		out := req.WithContext(cctx)
		out.GetBody = nil
		setKeyHeaders(out.Header, Call{Attempt: call.Attempt})
		return rt.RoundTrip(out)
	})
	f, ok := c.wait(req.Context(), l, call)
	switch {
	case !ok:
		return nil, ErrLate
	case f.err != nil:
		a := c.noAnswer(l, call, f)
		l.end()
		return nil, &CallError{Answer: a}
	}
	l.stopHB()
	f.resp.Body = &endingBody{ReadCloser: f.resp.Body, end: l.end}
	return f.resp, nil
}

// endingBody ends its call when closed.
type endingBody struct {
	io.ReadCloser
	end func()
}

func (b *endingBody) Close() error {
	err := b.ReadCloser.Close()
	b.end()
	return err
}

// Judge is the answer table applied to a response the door read itself
// (the gateway's): its verdict and the error that says why it is not Done.
func Judge(method, url string, status int, head []byte) (Verdict, error) {
	return judge(Call{Method: method, URL: url}, status, head)
}
