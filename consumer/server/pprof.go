package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"time"
)

// PprofEnv names the setting of the profiling endpoint: unset (the
// default), no endpoint; a loopback host:port, Go's net/http/pprof served
// there, on a listener of its own, never on the service's port.
const PprofEnv = "EVENTPIPE_PPROF_ADDR"

// ParsePprofAddr checks a PprofEnv value: "" (off) or host:port whose host
// is a loopback address (127.0.0.1, ::1) or localhost, so that only a
// process on the same machine (or, on GKE, kubectl port-forward) can read
// the profiles, which show the consumer's internals.
func ParsePprofAddr(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		return "", fmt.Errorf("%s=%q: %v (use a loopback host:port such as 127.0.0.1:6060, or unset it to serve no profiles)", PprofEnv, v, err)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return "", fmt.Errorf("%s=%q: the port %q is not a port number (use a loopback host:port such as 127.0.0.1:6060)", PprofEnv, v, port)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return "", fmt.Errorf("%s=%q: profiles are served on a loopback address only, and %q is not one (use 127.0.0.1:PORT or [::1]:PORT; reach it from the same machine, or through kubectl port-forward)", PprofEnv, v, host)
	}
	return v, nil
}

// pprofMux serves net/http/pprof's handlers under /debug/pprof/.
func pprofMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// startPprof serves the profiles on addr (checked by ParsePprofAddr) and
// returns the address it listens on and a function that stops it.
func startPprof(addr string, log *slog.Logger) (string, func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("%s=%q: listen: %w", PprofEnv, addr, err)
	}
	// A CPU profile or trace runs for its seconds parameter (30 s by
	// default): no write timeout, a header timeout against idle clients.
	srv := &http.Server{Handler: pprofMux(), ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("profiling endpoint stopped", "addr", ln.Addr().String(), "error", err.Error())
		}
	}()
	log.Info("profiling endpoint serving", "addr", ln.Addr().String(), "path", "/debug/pprof/", "variable", PprofEnv)
	return ln.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			_ = srv.Close()
		}
	}, nil
}
