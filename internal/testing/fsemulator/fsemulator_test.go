package fsemulator_test

import (
	"context"
	"net"
	"os"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/internal/testing/fsemulator"
)

func TestStartProcessListensOnLoopbackAndStops(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	host, stop, err := fsemulator.StartProcess(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h, _, err := net.SplitHostPort(host)
	if err != nil || h != "127.0.0.1" {
		t.Errorf("host %q: want 127.0.0.1:PORT", host)
	}
	c, err := net.DialTimeout("tcp", host, 5*time.Second)
	if err != nil {
		t.Fatalf("emulator not accepting connections: %v", err)
	}
	c.Close()
	if _, err := stop(); err != nil {
		t.Fatal(err)
	}
	if c, err := net.DialTimeout("tcp", host, time.Second); err == nil {
		c.Close()
		t.Error("emulator still listening after stop")
	}
}

func TestStartUsesExternalEmulator(t *testing.T) {
	t.Setenv(fsemulator.HostEnv, "127.0.0.1:1")
	em := fsemulator.Start(t)
	if !em.External || em.Host != "127.0.0.1:1" || em.IsolationReason() != "" {
		t.Errorf("external emulator: %+v (isolation reason %q)", em, em.IsolationReason())
	}
	if os.Getenv(fsemulator.HostEnv) != "127.0.0.1:1" {
		t.Error("FIRESTORE_EMULATOR_HOST changed")
	}
}
