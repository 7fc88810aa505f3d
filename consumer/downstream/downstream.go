// Package downstream performs a lease route's side effect: an HTTP POST to
// an external service carrying an Idempotency-Key header, so the receiver
// can dedupe too (expensive external calls happen once).
package downstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/eventpipe/eventpipe/consumer/classify"
)

// IdempotencyKeyHeader is the header that carries the lease's key.
const IdempotencyKeyHeader = "Idempotency-Key"

// Caller posts actions. The zero value is not usable; use New.
type Caller struct {
	client *http.Client
}

// New returns a Caller using client (http.DefaultClient's transport when nil).
func New(client *http.Client) *Caller {
	if client == nil {
		client = &http.Client{}
	}
	return &Caller{client: client}
}

// snippetBytes is how much of a refused answer's body an error quotes.
const snippetBytes = 512

// Response is a receiver's answer: its status, headers and the start of its
// body (at most the bound given to Do, plus one byte to tell a longer body).
type Response struct {
	Status int
	Header http.Header
	Head   []byte
	// Cut says the body could not be read to its end (or to the bound):
	// Head is only what arrived. The status still decides the call.
	Cut bool
}

// Post sends body as JSON to url with the idempotency key and waits at most
// timeout. It returns nil on 2xx; a classify.Transient error on 5xx, 408,
// 429, timeouts and connection failures (retry later); a classify.Poison
// error on any other status (the request itself is wrong).
func (c *Caller) Post(ctx context.Context, url, key string, body []byte, timeout time.Duration) (status int, err error) {
	resp, err := c.Do(ctx, url, key, body, timeout, snippetBytes)
	return resp.Status, err
}

// Do is Post that also returns the answer, with up to maxBody+1 bytes of
// its body (the rest is read and dropped, up to 1 MiB, so the connection can
// be reused).
func (c *Caller) Do(ctx context.Context, url, key string, body []byte, timeout time.Duration, maxBody int) (Response, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return Response{}, classify.Configuration(fmt.Errorf("downstream request to %s: %w", url, err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(IdempotencyKeyHeader, key)
	resp, err := c.client.Do(req)
	if err != nil {
		code := "UNAVAILABLE"
		if errors.Is(err, context.DeadlineExceeded) {
			code = "DEADLINE_EXCEEDED"
		}
		return Response{}, classify.Transient(fmt.Errorf("downstream POST %s: %w", url, err), code)
	}
	defer resp.Body.Close()
	head, rerr := io.ReadAll(io.LimitReader(resp.Body, int64(max(maxBody, snippetBytes))+1))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // let the connection be reused
	out := Response{Status: resp.StatusCode, Header: resp.Header, Head: head[:min(len(head), maxBody+1)], Cut: rerr != nil}
	snippet := head[:min(len(head), snippetBytes)]
	code := strconv.Itoa(resp.StatusCode)
	switch {
	case resp.StatusCode >= 500, resp.StatusCode == http.StatusRequestTimeout, resp.StatusCode == http.StatusTooManyRequests:
		return out, classify.Transient(fmt.Errorf("downstream POST %s: HTTP %d: %s", url, resp.StatusCode, snippet), code)
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return out, nil
	default:
		return out, classify.Poison(fmt.Errorf("downstream POST %s: HTTP %d (the request is rejected; fix the route's fields or the receiver): %s", url, resp.StatusCode, snippet))
	}
}
