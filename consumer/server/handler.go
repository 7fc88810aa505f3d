package server

import (
	"fmt"
	"log/slog"
	"net/http"

	"github.com/eventpipe/eventpipe/consumer/budget"
	"github.com/eventpipe/eventpipe/consumer/callback"
	"github.com/eventpipe/eventpipe/consumer/downstream"
	"github.com/eventpipe/eventpipe/consumer/handler"
	"github.com/eventpipe/eventpipe/consumer/process"
	"github.com/eventpipe/eventpipe/consumer/push"
	"github.com/eventpipe/eventpipe/consumer/tracing"
)

// mountGateway serves every path that is not the consumer's own through
// the handler gateway, when a handler is configured (EVENTPIPE_HANDLER_URL).
func mountGateway(mux *http.ServeMux, cfg Config, proc *process.Processor, log *slog.Logger, tracer *tracing.Tracer, caller *downstream.Caller,
	bodies *budget.Budget) error {
	if !cfg.Handler.Enabled() {
		return nil
	}
	var transport http.RoundTripper = handler.NewTransport()
	if tracer.Enabled() {
		transport = tracer.HTTPClient(&http.Client{Transport: transport}).Transport
	}
	gw, err := handler.NewGateway(cfg.Handler, handler.GatewayOptions{Engine: proc.Engine(), Logger: log, Transport: transport, Caller: caller,
		Own: []string{push.Path, callback.PathPrefix, HealthPath}, Budget: bodies})
	if err != nil {
		return fmt.Errorf("handler gateway: %w", err)
	}
	mux.Handle("/", gw)
	log.Info("handler gateway", "handler_url", cfg.Handler.URL, "timeout", cfg.Handler.Timeout.String(),
		"key_ttl", cfg.Handler.KeyTTL.String(), "max_stored_body", cfg.Handler.MaxStoredBody)
	return nil
}
