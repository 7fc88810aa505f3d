// Command barehttp serves pushload's bare HTTP endpoint (pushload.BareHTTP)
// as its own process, the way the consumer runs: on PORT, writing to the
// PostgreSQL database at EVENTPIPE_STORE, until SIGTERM. Command pushload
// starts it (-bare-http) and pushes to it as to the consumer binaries.
package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/eventpipe/eventpipe/consumer/settings"
	"github.com/eventpipe/eventpipe/internal/testing/pushload"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "barehttp:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	port, url := os.Getenv("PORT"), os.Getenv(settings.Store)
	if port == "" || url == "" {
		return fmt.Errorf("set PORT and %s (a postgres:// URL)", settings.Store)
	}
	b, err := pushload.OpenBare(ctx, url)
	if err != nil {
		return err
	}
	defer b.Close()
	srv := &http.Server{Addr: "127.0.0.1:" + port, Handler: pushload.BareHTTP(b), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.ListenAndServe() }()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shut down: %w", err)
	}
	return nil
}
