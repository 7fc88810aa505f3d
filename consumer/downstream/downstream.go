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

// Post sends body as JSON to url with the idempotency key and waits at most
// timeout. It returns nil on 2xx; a classify.Transient error on 5xx, 408,
// 429, timeouts and connection failures (retry later); a classify.Poison
// error on any other status (the request itself is wrong).
func (c *Caller) Post(ctx context.Context, url, key string, body []byte, timeout time.Duration) (status int, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, classify.Configuration(fmt.Errorf("downstream request to %s: %w", url, err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(IdempotencyKeyHeader, key)
	resp, err := c.client.Do(req)
	if err != nil {
		code := "UNAVAILABLE"
		if errors.Is(err, context.DeadlineExceeded) {
			code = "DEADLINE_EXCEEDED"
		}
		return 0, classify.Transient(fmt.Errorf("downstream POST %s: %w", url, err), code)
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // let the connection be reused
	code := strconv.Itoa(resp.StatusCode)
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return resp.StatusCode, nil
	case resp.StatusCode >= 500, resp.StatusCode == http.StatusRequestTimeout, resp.StatusCode == http.StatusTooManyRequests:
		return resp.StatusCode, classify.Transient(fmt.Errorf("downstream POST %s: HTTP %d: %s", url, resp.StatusCode, snippet), code)
	default:
		return resp.StatusCode, classify.Poison(fmt.Errorf("downstream POST %s: HTTP %d (the request is rejected; fix the route's fields or the receiver): %s", url, resp.StatusCode, snippet))
	}
}
