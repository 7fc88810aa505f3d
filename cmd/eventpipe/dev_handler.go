package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/eventpipe/eventpipe/devpipe"
)

// handlerFlags are the flags of `eventpipe dev` that run the team's handler
// beside the local pipeline (docs/handlers.md).
type handlerFlags struct {
	command string
	health  string
	routes  string
}

func (h *handlerFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&h.command, "handler", "", "run this command (sh -c) as the consumers' handler, with HANDLER_PORT set; its calls are counted")
	fl.StringVar(&h.health, "handler-health", "/healthz", "with --handler: the handler's health path, polled until it answers 2xx")
	fl.StringVar(&h.routes, "routes", "", "routes file every consumer uses instead of the stack's consumer.routes (e.g. routes naming the handler)")
}

// options are the devpipe options of the handler, nil without --handler;
// its output goes to handler.log in dir.
func (h *handlerFlags) options(dir string) (*devpipe.HandlerOptions, error) {
	if h.command == "" {
		return nil, nil
	}
	out, err := os.Create(filepath.Join(dir, "handler.log"))
	if err != nil {
		return nil, fmt.Errorf("handler log: %w", err)
	}
	return &devpipe.HandlerOptions{Command: h.command, HealthPath: h.health, Output: out}, nil
}
