package handler

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/eventpipe/eventpipe/consumer/logfields"
)

// Waits of WaitReady.
const (
	// readyPoll is how often WaitReady asks the handler's health path.
	readyPoll = 250 * time.Millisecond
	// readyLogEvery is how often WaitReady says it is still waiting.
	readyLogEvery = 10 * time.Second
)

// WaitReady returns once a GET of the handler's health path (cfg.URL +
// cfg.HealthPath) answers 2xx, asking every readyPoll, or with ctx's cause
// (context.Cause: shutdown, a deadline, the handler's exit) when ctx ends
// first. A pulling consumer calls it before it pulls, so no message is
// taken (and no handler attempt spent) before the handler listens: on a
// worker pool nothing else orders the two containers (pulumi-gcp v8
// declares no startup probe there); `eventpipe dev --handler` calls it
// before it starts the consumers. With no handler it returns at once.
func WaitReady(ctx context.Context, client *http.Client, cfg Config, log *slog.Logger) error {
	if !cfg.Enabled() {
		return nil
	}
	cfg = cfg.withDefaults()
	if client == nil {
		client = http.DefaultClient
	}
	url := strings.TrimRight(cfg.URL, "/") + cfg.HealthPath
	started, lastLog := time.Now(), time.Now()
	tick := time.NewTicker(readyPoll)
	defer tick.Stop()
	for {
		status, err := probe(ctx, client, url)
		if err == nil && status >= 200 && status < 300 {
			log.Info("handler ready", "url", url, "waited_ms", time.Since(started).Milliseconds())
			return nil
		}
		if time.Since(lastLog) >= readyLogEvery {
			lastLog = time.Now()
			log.Warn("waiting for the handler to answer its health path before pulling", "url", url, "http_status", status,
				logfields.Error, fmt.Sprint(err), "waited_ms", time.Since(started).Milliseconds())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the handler at %s did not answer 2xx (last: HTTP %d, %v): %w", url, status, err, context.Cause(ctx))
		case <-tick.C:
		}
	}
}

// probe GETs url once, bounded by readyPoll's multiple, and returns the status.
func probe(ctx context.Context, client *http.Client, url string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 4*readyPoll)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}
