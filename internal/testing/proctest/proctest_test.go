package proctest_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"github.com/eventpipe/eventpipe/internal/testing/proctest"
)

// childEnv makes the test binary act as the child process: it serves /healthz on PORT,
// writes a JSON line and a plain line, exits 0 on SIGTERM after a last JSON line, and
// kills itself with SIGKILL when /die is requested.
const childEnv = "PROCTEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(child())
	}
	os.Exit(m.Run())
}

func child() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("/die", func(http.ResponseWriter, *http.Request) { _ = syscall.Kill(os.Getpid(), syscall.SIGKILL) })
	srv := &http.Server{Addr: "127.0.0.1:" + os.Getenv("PORT"), Handler: mux}
	fmt.Println(`{"message":"started","mode":"` + os.Getenv(childEnv) + `"}`)
	fmt.Println("not json")
	go func() { <-ctx.Done(); _ = srv.Close() }()
	if err := srv.ListenAndServe(); err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(`{"message":"stopped"}`)
	return 0
}

func TestStartLinesStop(t *testing.T) {
	p := proctest.Start(t, os.Args[0], proctest.Options{Env: []string{childEnv + "=serve"}})
	p.Stop(t)
	lines := p.Lines()
	if len(lines) != 2 || lines[0]["message"] != "started" || lines[0]["mode"] != "serve" || lines[1]["message"] != "stopped" {
		t.Fatalf("JSON lines %v, want the start and stop lines", lines)
	}
	if raw := p.Raw(); len(raw) != 3 || string(raw[1]) != "not json" {
		t.Fatalf("raw lines %q, want all three", raw)
	}
	if p.Err() != nil {
		t.Fatalf("Err = %v after a clean exit", p.Err())
	}
}

func TestWaitKilled(t *testing.T) {
	p := proctest.Start(t, os.Args[0], proctest.Options{Env: []string{childEnv + "=kill"}})
	if resp, err := http.Get(p.URL + "/die"); err == nil {
		resp.Body.Close()
	}
	p.WaitKilled(t)
	if p.Err() == nil {
		t.Fatal("Err is nil after SIGKILL")
	}
}

func TestBaseEnvironmentReplacesInherited(t *testing.T) {
	t.Setenv("PROCTEST_INHERITED", "yes")
	p := proctest.Start(t, os.Args[0], proctest.Options{Base: []string{"PATH=" + os.Getenv("PATH")}, Env: []string{childEnv + "=serve"}})
	for _, kv := range p.Cmd.Env {
		if kv == "PROCTEST_INHERITED=yes" {
			t.Fatalf("environment %q inherited a variable Base leaves out", p.Cmd.Env)
		}
	}
	p.Stop(t)
}
