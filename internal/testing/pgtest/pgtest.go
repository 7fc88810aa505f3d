// Package pgtest starts a throwaway PostgreSQL cluster for tests: initdb in a
// temporary directory (as the postgres user when running as root, because
// initdb refuses root), a server on a free loopback port, and stop + removal
// afterwards. Any package's tests can use it: Start inside a test, or
// StartCluster from TestMain to share one cluster.
//
// A cluster syncs as a production server does (fsync, synchronous_commit
// and full_page_writes on: Cloud SQL's settings), so a commit costs what
// it costs there (an fdatasync of the WAL: milliseconds on a disk, not the
// tenths of a server that does not sync) and every figure taken on it is
// one a user would see. NoSync turns syncing off for a test where
// durability and timing are irrelevant: an explicit choice with its
// reason, never the default.
//
// A test process killed before its cleanup (a go test -timeout, SIGKILL)
// leaves its server running. Every cluster directory records the PID of the
// process that started it, and StartCluster first stops and removes the
// clusters whose starting process is gone.
package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// BinEnv names the environment variable that overrides where the PostgreSQL
// binaries (initdb, pg_ctl) are found.
const BinEnv = "EVENTPIPE_PG_BIN"

// DefaultBinDir is where Debian's postgresql-15 package installs the binaries.
const DefaultBinDir = "/usr/lib/postgresql/15/bin"

// Cluster is a running throwaway cluster.
type Cluster struct {
	// URL connects as the superuser "postgres" to database "postgres".
	URL  string
	Port int
	dir  string
	bin  string
	asPG *user.User // non-nil when commands run as the postgres user
	opts options
}

// Option changes how a cluster runs.
type Option func(*options)

type options struct {
	// noSync is the reason the cluster does not sync; "" for a syncing one.
	noSync string
}

// NoSync runs the cluster with fsync, synchronous_commit and
// full_page_writes off: commits cost no disk flush, which makes tests that
// commit thousands of transactions fast, and makes every timing taken on
// it wrong for a real server. reason says why durability and timing are
// irrelevant to the caller (it is shown by Cluster.String); an empty
// reason panics, so the choice is always written down.
func NoSync(reason string) Option {
	if strings.TrimSpace(reason) == "" {
		panic("pgtest.NoSync: give the reason this cluster need not sync")
	}
	return func(o *options) { o.noSync = reason }
}

// Syncing reports whether the cluster syncs (the default; see NoSync).
func (c *Cluster) Syncing() bool { return c.opts.noSync == "" }

// String describes the cluster: its port and whether it syncs.
func (c *Cluster) String() string {
	if c.Syncing() {
		return fmt.Sprintf("PostgreSQL on port %d, syncing (fsync and synchronous_commit on)", c.Port)
	}
	return fmt.Sprintf("PostgreSQL on port %d, not syncing (%s)", c.Port, c.opts.noSync)
}

// BinDir returns the directory holding initdb and pg_ctl, or an error that
// says how to install or point at them.
func BinDir() (string, error) {
	dirs := []string{os.Getenv(BinEnv), DefaultBinDir}
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		dirs = append(dirs, filepath.Dir(p))
	}
	return findBin(dirs)
}

func findBin(dirs []string) (string, error) {
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", fmt.Errorf("PostgreSQL binaries not found (looked for initdb in %s): install postgresql-15 (apt-get install postgresql-15) or set %s to the directory holding initdb and pg_ctl",
		strings.Join(dirs, ", "), BinEnv)
}

// Start starts a cluster for one test and stops it when the test ends. A
// missing PostgreSQL installation fails the test with a clear message: it is
// never skipped silently. Under go test -short (make quick, the contributors'
// loop) the test is skipped, saying so: make test runs it.
func Start(t testing.TB, opts ...Option) *Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("pgtest: -short (make quick) runs no PostgreSQL cluster; make test does")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := StartCluster(ctx, opts...)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return c
}

// StartCluster starts a cluster; the caller must Stop it.
func StartCluster(ctx context.Context, opts ...Option) (*Cluster, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	c := &Cluster{bin: bin}
	for _, o := range opts {
		o(&c.opts)
	}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root, initdb needs the postgres user: %w (create it, or run the tests as a normal user)", err)
		}
		c.asPG = u
	}
	base := c.tempBase()
	c.sweep(ctx, base)
	c.dir, err = os.MkdirTemp(base, dirPrefix)
	if err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	if err := os.WriteFile(filepath.Join(c.dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		_ = os.RemoveAll(c.dir)
		return nil, fmt.Errorf("record the owner of %s: %w", c.dir, err)
	}
	if err := c.prepareDir(); err != nil {
		_ = os.RemoveAll(c.dir)
		return nil, err
	}
	data := filepath.Join(c.dir, "data")
	if out, err := c.run(ctx, "initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions"); err != nil {
		_ = os.RemoveAll(c.dir)
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	// A port found free can be taken before the server binds it: try a few.
	var lastErr error
	for i := 0; i < 3; i++ {
		port, err := freePort()
		if err != nil {
			lastErr = err
			continue
		}
		c.Port = port
		if lastErr = c.Resume(ctx); lastErr == nil {
			c.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
			return c, nil
		}
	}
	_ = os.RemoveAll(c.dir)
	return nil, lastErr
}

// dirPrefix starts the name of every cluster directory.
const dirPrefix = "eventpipe-pgtest-"

// ownerFile, in a cluster directory, holds the PID of the process that
// started the cluster.
const ownerFile = "owner.pid"

// unownedGrace is how old a cluster directory without an owner file must be
// before a sweep removes it: younger ones may be mid-creation.
const unownedGrace = 10 * time.Minute

// sweep stops and removes the clusters under base left behind by processes
// that no longer run. Failures are ignored: a leftover cluster costs memory
// and a port, never a test result.
func (c *Cluster) sweep(ctx context.Context, base string) {
	dirs, err := filepath.Glob(filepath.Join(base, dirPrefix+"*"))
	if err != nil {
		return
	}
	for _, dir := range dirs {
		if !abandoned(dir) {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, "data", "postmaster.pid")); err == nil {
			stale := &Cluster{dir: dir, bin: c.bin, asPG: c.asPG}
			_, _ = stale.run(ctx, "pg_ctl", "stop", "-D", filepath.Join(dir, "data"), "-m", "immediate", "-w")
		}
		_ = os.RemoveAll(dir)
	}
}

// abandoned reports whether the cluster directory's starting process is gone
// (or, without an owner file, whether the directory is older than unownedGrace).
func abandoned(dir string) bool {
	raw, err := os.ReadFile(filepath.Join(dir, ownerFile))
	if err != nil {
		fi, statErr := os.Stat(dir)
		return errors.Is(err, os.ErrNotExist) && statErr == nil && time.Since(fi.ModTime()) > unownedGrace
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil || pid <= 0 {
		return true
	}
	// Signal 0 checks that the process exists; EPERM means it does, owned by
	// another user.
	err = syscall.Kill(pid, 0)
	return errors.Is(err, syscall.ESRCH)
}

// Pause stops the server (fast shutdown) keeping its data, to test how
// clients behave while the database is down; Resume starts it again.
func (c *Cluster) Pause(ctx context.Context) error {
	out, err := c.run(ctx, "pg_ctl", "stop", "-D", filepath.Join(c.dir, "data"), "-m", "fast", "-w")
	if err != nil {
		return fmt.Errorf("pg_ctl stop: %w\n%s", err, out)
	}
	return nil
}

// Resume starts the server on its port (again, after Pause).
func (c *Cluster) Resume(ctx context.Context) error {
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=100", c.Port, c.dir)
	if c.Syncing() {
		// PostgreSQL's defaults, spelt out: a commit returns once its WAL
		// is flushed to disk.
		opts += " -c fsync=on -c synchronous_commit=on -c full_page_writes=on"
	} else {
		opts += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
	}
	out, err := c.run(ctx, "pg_ctl", "start", "-D", filepath.Join(c.dir, "data"), "-w", "-t", "60", "-l", filepath.Join(c.dir, "server.log"), "-o", opts)
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(c.dir, "server.log"))
		return fmt.Errorf("pg_ctl start on port %d: %w\n%s\n%s", c.Port, err, out, log)
	}
	return nil
}

// tempBase is os.TempDir, unless commands run as the postgres user and
// cannot reach it (a TMPDIR under /root): then /tmp.
func (c *Cluster) tempBase() string {
	base := os.TempDir()
	if c.asPG == nil {
		return base
	}
	for d := base; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return "/tmp"
		}
		if d == filepath.Dir(d) {
			return base
		}
	}
}

// prepareDir makes the temp dir usable by the postgres user.
func (c *Cluster) prepareDir() error {
	if c.asPG == nil {
		return nil
	}
	uid, err1 := strconv.Atoi(c.asPG.Uid)
	gid, err2 := strconv.Atoi(c.asPG.Gid)
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("postgres user ids: %w", err)
	}
	if err := os.Chown(c.dir, uid, gid); err != nil {
		return fmt.Errorf("chown %s to postgres: %w", c.dir, err)
	}
	return os.Chmod(c.dir, 0o700)
}

func (c *Cluster) run(ctx context.Context, tool string, args ...string) ([]byte, error) {
	path := filepath.Join(c.bin, tool)
	var cmd *exec.Cmd
	if c.asPG != nil {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, path, args...)
	}
	cmd.Dir = c.dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// NewDatabase creates an empty database on the cluster and returns its URL.
func (c *Cluster) NewDatabase(ctx context.Context, name string) (string, error) {
	conn, err := pgx.Connect(ctx, c.URL)
	if err != nil {
		return "", fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return strings.Replace(c.URL, "/postgres?", "/"+name+"?", 1), nil
}

// Stop stops the server at once and removes its directory.
func (c *Cluster) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := c.run(ctx, "pg_ctl", "stop", "-D", filepath.Join(c.dir, "data"), "-m", "immediate", "-w")
	rmErr := os.RemoveAll(c.dir)
	if err != nil {
		return fmt.Errorf("pg_ctl stop: %w\n%s", err, out)
	}
	if rmErr != nil {
		return fmt.Errorf("remove %s: %w", c.dir, rmErr)
	}
	return nil
}

// WaitLockWaiters waits until at least n sessions of the server at url wait
// for advisory locks (pg_locks), polling every millisecond for up to 10 s;
// a test uses it to act once transactions queue on a document.
func WaitLockWaiters(t testing.TB, url string, n int) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	defer conn.Close(ctx)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for range 10000 {
		var waiting int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted").Scan(&waiting); err != nil {
			t.Fatalf("pgtest: %v", err)
		}
		if waiting >= n {
			return
		}
		<-tick.C
	}
	t.Fatalf("pgtest: fewer than %d sessions wait for advisory locks after 10s", n)
}
