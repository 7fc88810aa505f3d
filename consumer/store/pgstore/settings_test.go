package pgstore

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// TestParseDurationForms: every positive whole number of milliseconds
// reads back the same in each syntax the URL accepts: PostgreSQL's bare
// milliseconds and units, and Go's.
func TestParseDurationForms(t *testing.T) {
	for _, ms := range []int64{1, 7, 999, 1000, 1500, 59_999, 60_000, 90_000, 3_600_000, 86_400_000} {
		d := time.Duration(ms) * time.Millisecond
		forms := []string{fmt.Sprint(ms), fmt.Sprintf("%dms", ms), d.String(), fmt.Sprintf(" %d ms ", ms)}
		if ms%1000 == 0 {
			forms = append(forms, fmt.Sprintf("%ds", ms/1000))
		}
		if ms%60_000 == 0 {
			forms = append(forms, fmt.Sprintf("%dmin", ms/60_000), fmt.Sprintf("%d min", ms/60_000))
		}
		if ms%3_600_000 == 0 {
			forms = append(forms, fmt.Sprintf("%dh", ms/3_600_000))
		}
		if ms%86_400_000 == 0 {
			forms = append(forms, fmt.Sprintf("%dd", ms/86_400_000))
		}
		for _, f := range forms {
			if got, err := parseDuration(f); err != nil || got != d {
				t.Errorf("parseDuration(%q) = %v, %v; want %v", f, got, err, d)
			}
		}
	}
}

// FuzzParseDuration: any input is either refused or read as at least a
// millisecond (0 would turn PostgreSQL's timeouts off), and a value read
// is written back (millis) as the same whole milliseconds.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"0", "0s", "-1s", "1", "2.5s", "1min", "1m30s", "3d", "ms", "", "s", "1e3", "NaN", "Inf", "0.4", "5 min", "1y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseDuration(s)
		if err != nil {
			return
		}
		if d < time.Millisecond {
			t.Fatalf("parseDuration(%q) = %v: below 1ms accepted", s, d)
		}
		if got := millis(d); got != fmt.Sprint(d.Milliseconds()) {
			t.Fatalf("millis(%v) = %s", d, got)
		}
	})
}

// TestSettingsDerivedFromRequestTimeout: with only a request timeout R,
// lock_timeout and idle_in_transaction_session_timeout are R/4 and
// statement_timeout R/2, each sent to the server in milliseconds (the
// session's lock_timeout is the probe); a bound set in the URL wins.
func TestSettingsDerivedFromRequestTimeout(t *testing.T) {
	for _, r := range []time.Duration{time.Second, 10 * time.Second, 60 * time.Second, 10 * time.Minute} {
		cfg := parse(t, "eventpipe_request_timeout="+r.String())
		s, err := parseSettings(cfg)
		if err != nil {
			t.Fatal(err)
		}
		want := Settings{RequestTimeout: r, LockTimeout: r / 4, StatementTimeout: r / 2, IdleInTransactionTimeout: r / 4,
			Probe: min(maxProbe, r/4), Waiters: s.Waiters}
		if s != want {
			t.Errorf("R=%v: %+v; want %+v", r, s, want)
		}
		p := cfg.ConnConfig.RuntimeParams
		if p["lock_timeout"] != millis(s.Probe) || p["statement_timeout"] != millis(r/2) || p["idle_in_transaction_session_timeout"] != millis(r/4) {
			t.Errorf("R=%v: server parameters %v", r, p)
		}
		if _, ok := p[ParamRequestTimeout]; ok {
			t.Errorf("R=%v: %s would be sent to the server, which refuses it", r, ParamRequestTimeout)
		}
	}
	s, err := parseSettings(parse(t, "lock_timeout=300ms&statement_timeout=1min&idle_in_transaction_session_timeout=45s"))
	if err != nil {
		t.Fatal(err)
	}
	if s.RequestTimeout != DefaultRequestTimeout || s.LockTimeout != 300*time.Millisecond || s.StatementTimeout != time.Minute ||
		s.IdleInTransactionTimeout != 45*time.Second {
		t.Errorf("bounds set in the URL: %+v", s)
	}
}

// TestWaitersLeaveAReserve: for every pool size, the connections that may
// wait for held documents past the probe leave at least one (a quarter)
// for other documents; a pool of one has one waiter and no reserve.
func TestWaitersLeaveAReserve(t *testing.T) {
	for n := 1; n <= 256; n++ {
		s, err := parseSettings(parse(t, fmt.Sprintf("pool_max_conns=%d", n)))
		if err != nil {
			t.Fatal(err)
		}
		reserve := n - s.Waiters
		if s.Waiters < 1 || (n > 1 && (reserve < 1 || reserve < n/4)) || (n == 1 && s.Waiters != 1) {
			t.Errorf("pool %d: %d waiters, reserve %d", n, s.Waiters, reserve)
		}
	}
}

// TestSettingsErrorsNameTheParameter: a bad bound is refused, naming the
// parameter and the fix.
func TestSettingsErrorsNameTheParameter(t *testing.T) {
	for _, name := range []string{ParamRequestTimeout, ParamLockTimeout, ParamStatementTimeout, ParamIdleInTransactionTimeout} {
		for _, v := range []string{"0", "soon", "-5s", "0.5ms"} {
			_, err := parseSettings(parse(t, name+"="+v))
			if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "use a positive duration") {
				t.Errorf("%s=%s: %v; want an error naming %s and the fix", name, v, err, name)
			}
		}
	}
}

func parse(t *testing.T, query string) *pgxpool.Config {
	t.Helper()
	cfg, err := pgxpool.ParseConfig("postgres://u@127.0.0.1:1/db?" + query)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestPoolDefaultsToDefaultMaxConns: a store URL without pool_max_conns
// gets DefaultMaxConns connections (or pgx's default when larger); one that
// sets it, in a URL or a key=value string, keeps its own, whatever the size.
func TestPoolDefaultsToDefaultMaxConns(t *testing.T) {
	pgxDefault := func() int32 {
		cfg, err := pgxpool.ParseConfig("postgres://u@127.0.0.1:1/db")
		if err != nil {
			t.Fatal(err)
		}
		return cfg.MaxConns
	}()
	cases := map[string]int32{
		"postgres://u@127.0.0.1:1/db":                   max(pgxDefault, DefaultMaxConns),
		"postgresql://u@127.0.0.1:1/db?lock_timeout=1s": max(pgxDefault, DefaultMaxConns),
		"host=127.0.0.1 port=1 user=u dbname=db":        pgxDefault,
	}
	if _, err := ParsePoolConfig("postgres://u@127.0.0.1:1/db?pool_max_conns=many"); err == nil {
		t.Error("pool_max_conns=many accepted")
	}
	for _, n := range []int32{1, 2, DefaultMaxConns - 1, DefaultMaxConns, DefaultMaxConns + 1, 64} {
		cases[fmt.Sprintf("postgres://u@127.0.0.1:1/db?pool_max_conns=%d", n)] = n
		cases[fmt.Sprintf("postgresql://u@127.0.0.1:1/db?lock_timeout=1s&pool_max_conns=%d", n)] = n
		cases[fmt.Sprintf("host=127.0.0.1 port=1 user=u dbname=db pool_max_conns=%d", n)] = n
	}
	for raw, want := range cases {
		cfg, err := ParsePoolConfig(raw)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.MaxConns != want {
			t.Errorf("%s: pool of %d, want %d", raw, cfg.MaxConns, want)
		}
	}
}

// TestDocsStateDefaultMaxConns: docs/consumer.md states the pool's default
// as DefaultMaxConns is.
func TestDocsStateDefaultMaxConns(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/consumer.md")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("(`pool_max_conns`; by default %d,", DefaultMaxConns)
	if !strings.Contains(strings.Join(strings.Fields(string(doc)), " "), want) {
		t.Errorf("docs/consumer.md does not say %q: DefaultMaxConns is %d", want, DefaultMaxConns)
	}
}
