package pgtest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// deadPID returns the PID of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// TestSweepStopsAbandonedClusters starts two clusters, makes the first look
// left behind by a killed test process, and checks that starting a third
// stops and removes it while the second (owned by this live process) keeps
// running.
func TestSweepStopsAbandonedClusters(t *testing.T) {
	ctx := context.Background()
	abandonedC, err := StartCluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	live := Start(t)
	if err := os.WriteFile(filepath.Join(abandonedC.dir, ownerFile), []byte(strconv.Itoa(deadPID(t))), 0o644); err != nil {
		t.Fatal(err)
	}
	Start(t) // sweeps before it starts

	if _, err := os.Stat(abandonedC.dir); !os.IsNotExist(err) {
		_ = abandonedC.Stop()
		t.Fatalf("abandoned cluster directory %s still there (stat: %v)", abandonedC.dir, err)
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if conn, err := pgx.Connect(cctx, abandonedC.URL); err == nil {
		conn.Close(ctx)
		t.Errorf("abandoned cluster on port %d still answers", abandonedC.Port)
	}
	conn, err := pgx.Connect(cctx, live.URL)
	if err != nil {
		t.Fatalf("the live process's cluster was swept: %v", err)
	}
	conn.Close(ctx)
}

func TestAbandoned(t *testing.T) {
	base := t.TempDir()
	write := func(name, owner string, age time.Duration) string {
		dir := filepath.Join(base, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if owner != "" {
			if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(owner), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		old := time.Now().Add(-age)
		if err := os.Chtimes(dir, old, old); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	cases := []struct {
		name  string
		owner string
		age   time.Duration
		want  bool
	}{
		{"live owner", strconv.Itoa(os.Getpid()), time.Hour, false},
		{"dead owner", strconv.Itoa(deadPID(t)), 0, true},
		{"garbled owner", "not-a-pid", 0, true},
		{"no owner yet, young (mid-creation)", "", time.Minute, false},
		{"no owner, old", "", time.Hour, true},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := write(dirPrefix+strconv.Itoa(i), tc.owner, tc.age)
			if got := abandoned(dir); got != tc.want {
				t.Errorf("abandoned = %v, want %v", got, tc.want)
			}
		})
	}
}
