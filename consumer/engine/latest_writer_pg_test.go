package engine_test

import (
	"bytes"
	"cmp"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/eventpipe/eventpipe/consumer/engine"
	"github.com/eventpipe/eventpipe/consumer/keys"
	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/pgstore"
	ct "github.com/eventpipe/eventpipe/internal/testing/consumertest"
	"github.com/eventpipe/eventpipe/internal/testing/pgtest"
)

var (
	latestCases = flag.Int("latest-cases", 500, "generated cases of TestLatestWriterDecidesAsTheEngine")
	latestSeed  = flag.Uint64("latest-seed", 0, "seed of TestLatestWriterDecidesAsTheEngine's generator (0: a new one, logged)")
)

// recordingWriter passes WriteLatest through and keeps its last result.
type recordingWriter struct {
	store.Store
	lw   store.LatestWriter
	mu   sync.Mutex
	last *store.LatestResult
}

func (r *recordingWriter) WriteLatest(ctx context.Context, w store.LatestWrite) (store.LatestResult, error) {
	res, err := r.lw.WriteLatest(ctx, w)
	r.mu.Lock()
	r.last = &res
	r.mu.Unlock()
	return res, err
}

func (r *recordingWriter) take() *store.LatestResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.last
	r.last = nil
	return l
}

// txOnly hides a store's LatestWriter: the engine runs its own transaction.
type txOnly struct{ store.Store }

// openPG opens a store on a cluster that does not sync (these tests check
// decisions, not timings, and commit thousands of transactions), in a
// database whose default collation is ICU's en-US, as a server's usually
// is (Cloud SQL's default is en_US.UTF8), not the byte order the engine
// compares text in: the statement must name its collation.
func openPG(t *testing.T) *pgstore.Store {
	t.Helper()
	s, _ := openPGURL(t)
	return s
}

// openPGURL is openPG, and the database's URL.
func openPGURL(t *testing.T) (*pgstore.Store, string) {
	t.Helper()
	ctx := context.Background()
	pg := pgtest.Start(t, pgtest.NoSync("decisions of generated cases, no timing"))
	conn, err := pgx.Connect(ctx, pg.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE latest LOCALE_PROVIDER icu ICU_LOCALE 'en-US' TEMPLATE template0"); err != nil {
		t.Fatalf("create a database collating by ICU's en-US (PostgreSQL built with ICU, as Debian's is): %v", err)
	}
	url := strings.Replace(pg.URL, "/postgres?", "/latest?", 1)
	dconn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer dconn.Close(ctx)
	var byteOrder bool
	if err := dconn.QueryRow(ctx, "SELECT 'B' < 'a'").Scan(&byteOrder); err != nil || byteOrder {
		t.Fatalf("the database sorts 'B' before 'a' (%v): its collation is byte order, and the test would not see a statement that forgets its own", err)
	}
	s, err := pgstore.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, url
}

// TestLatestWriterDecidesAsTheEngine is the property that lets the engine
// hand a latest-state write to PostgreSQL's one statement: for any stored
// document (absent, expired, live with any version the engine writes, or
// with one in a form only the engine reads), any dedupe marker (absent,
// expired, live, with any fingerprint) and any message (producer, derived
// or message-id event keys, any sequence, event and publish time around
// the window's edges, any fingerprint, v1 forms included), under any
// window, sequence bound and fingerprint mode, the engine on pgstore's
// WriteLatest gives the same result (outcome, warning, counts, error) and
// leaves the same documents as the engine running its own transaction on
// the same documents; WriteLatest writes exactly when the engine applies
// and decides every case whose stored values are in the form the engine
// writes them.
func TestLatestWriterDecidesAsTheEngine(t *testing.T) {
	s := openPG(t)
	rec := &recordingWriter{Store: s, lw: s}
	seed := *latestSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -latest-seed %d)", seed, seed)
	r := rand.New(rand.NewPCG(seed, 0))
	payloads := fingerprintPayloads(t)
	decided := map[bool]int{}
	outcomes := map[string]int{}
	for i := range *latestCases {
		c := genLatestCase(r, i, payloads)
		fast, general := c.run(t, rec), c.run(t, txOnly{s})
		last := rec.take()
		if fast.result != general.result || !bytes.Equal(fast.target, general.target) || !bytes.Equal(fast.marker, general.marker) {
			t.Fatalf("case %d: %s\nwith WriteLatest: %s\n  target %s\n  marker %s\nthe engine's own transaction: %s\n  target %s\n  marker %s",
				i, c, fast.result, fast.target, fast.marker, general.result, general.target, general.marker)
		}
		if fast.logged != "" {
			t.Fatalf("case %d: %s\nthe engine logged a disagreement with the store: %s", i, c, fast.logged)
		}
		if last == nil {
			t.Fatalf("case %d: %s\nthe engine did not use the store's WriteLatest", i, c)
		}
		if c.readable && !last.Decided {
			t.Fatalf("case %d: %s\nWriteLatest left undecided a case whose stored values are in the form the engine writes", i, c)
		}
		decided[last.Decided]++
		outcomes[fast.outcome]++
	}
	t.Logf("decided by the statement %d, by the engine %d; results %v", decided[true], decided[false], outcomes)
	if decided[true] == 0 || len(outcomes) < 4 {
		t.Fatalf("the generator covers too little: decided %v, results %v", decided, outcomes)
	}
}

// latestCase is one generated case: stored documents and a message.
type latestCase struct {
	n        int
	window   time.Duration
	maxJump  int64
	mode     engine.FingerprintMode
	now      time.Time
	prior    *latestMsg // applied first, when the target exists
	target   string     // "absent", "live", "expired", or an unreadable form
	marker   string     // "absent", "live", "expired"
	markerFP string
	storedFP string // the stored version's fingerprint
	msg      latestMsg
	// readable: every stored value is in the form the engine writes.
	readable bool
}

type latestMsg struct {
	ev engine.Event
	w  engine.Write
}

func (m latestMsg) String() string {
	seq := "none"
	if m.w.Sequence != nil {
		seq = fmt.Sprint(*m.w.Sequence)
	}
	return fmt.Sprintf("{id %q eventId %q identity %v payload %s seq %s eventTime %s publish %s}", m.ev.MessageID, m.ev.EventID,
		m.ev.Identity, m.ev.Payload, seq, m.w.EventTime.Format(time.RFC3339Nano), m.ev.PublishTime.Format(time.RFC3339Nano))
}

func (c latestCase) String() string {
	prior := "none"
	if c.prior != nil {
		prior = c.prior.String()
	}
	return fmt.Sprintf("window %s, max jump %d, mode %s, now %s\n  stored target %s from %s (fingerprint %q)\n  marker %s (fingerprint %q)\n  message %s",
		c.window, c.maxJump, c.mode, c.now.Format(time.RFC3339Nano), c.target, prior, c.storedFP, c.marker, c.markerFP, c.msg)
}

// fingerprintPayloads are payloads whose fingerprints the cases mix: some
// with a v1 form ("+v1:") and the v1 form alone, as records written before
// RFC 8785 hold it.
func fingerprintPayloads(t *testing.T) [][]byte {
	cands := []string{`{"a":1}`, `{"a":2}`, `{"b":"x"}`, `{"n":1e21}`, `{"n":0.000001}`, `{"n":9007199254740993}`, `{"𝄞":1,"ﬀ":2}`}
	var out [][]byte
	v1 := false
	for _, p := range cands {
		fp, err := keys.Fingerprint([]byte(p))
		if err != nil {
			t.Fatal(err)
		}
		v1 = v1 || strings.Contains(fp, "+v1:")
		out = append(out, []byte(p))
	}
	if !v1 {
		t.Fatal("no candidate payload has a v1 form: the cases would not cover SameFingerprint's v1 match")
	}
	return out
}

var latestBase = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func genLatestCase(r *rand.Rand, n int, payloads [][]byte) latestCase {
	c := latestCase{n: n, window: pick(r, []time.Duration{time.Minute, 5 * time.Minute}),
		maxJump: pick(r, []int64{0, 1, 10, 1_000_000}), mode: pick(r, []engine.FingerprintMode{engine.FingerprintError, engine.FingerprintWarn}),
		readable: true}
	c.now = latestBase.Add(time.Hour)
	c.msg = genMsg(r, c.window, payloads, "m")
	c.target = pick(r, []string{"absent", "live", "live", "live", "live", "expired"})
	if c.target != "absent" {
		p := genMsg(r, c.window, payloads, "p")
		if r.IntN(3) == 0 {
			// The same event again (a redelivery, or a reused event id).
			p.ev.EventID, p.ev.Identity = c.msg.ev.EventID, c.msg.ev.Identity
			if r.IntN(2) == 0 {
				p.ev.MessageID = c.msg.ev.MessageID
			}
		}
		switch r.IntN(4) {
		case 0:
			// Another version of the same instant: only the event key and
			// fingerprint tell the two apart.
			p.ev.PublishTime, p.w.EventTime, p.w.Sequence = c.msg.ev.PublishTime, c.msg.w.EventTime, c.msg.w.Sequence
			if r.IntN(2) == 0 {
				// Ids that byte order and a language's collation sort apart
				// (the event key of a message without an event id).
				ids := []string{"é", "zz"}
				r.Shuffle(2, func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
				p.ev.MessageID, c.msg.ev.MessageID = ids[0], ids[1]
			}
		case 1:
			// A republished copy of one event (Ordering: every copy ranks
			// the same): its payload, event time and sequence, another
			// message id and publish time, within or across the window.
			p.ev.EventID, p.ev.Identity, p.ev.Payload = c.msg.ev.EventID, c.msg.ev.Identity, c.msg.ev.Payload
			p.w.EventTime, p.w.Sequence = c.msg.w.EventTime, c.msg.w.Sequence
			p.ev.MessageID = c.msg.ev.MessageID + "-copy"
			if !c.msg.ev.PublishTime.IsZero() { // (one without is earlier than all)
				p.ev.PublishTime = c.msg.ev.PublishTime.Add(pick(r, []time.Duration{time.Microsecond, -time.Microsecond, c.window, -c.window,
					c.window + time.Microsecond, -c.window - time.Microsecond}))
			}
		}
		c.prior = &p
		if c.target == "live" && r.IntN(6) == 0 {
			c.target = pick(r, []string{"nanosecond time", "float sequence", "escaped message id", "no version", "version not a map", "time with another key"})
			// Escaped text and an absent version are read alike by both.
			c.readable = c.target == "escaped message id" || c.target == "no version"
		}
	}
	c.marker = pick(r, []string{"absent", "absent", "live", "expired"})
	if c.marker != "absent" {
		fp, _ := keys.Fingerprint(c.msg.ev.Payload)
		other, _ := keys.Fingerprint(pick(r, payloads))
		c.markerFP = fingerprintVariant(r, fp, other)
	}
	if c.prior != nil {
		fp, _ := keys.Fingerprint(c.msg.ev.Payload)
		other, _ := keys.Fingerprint(pick(r, payloads))
		c.storedFP = fingerprintVariant(r, fp, other)
		if c.prior.w.Sequence != nil && c.msg.w.Sequence != nil && r.IntN(4) != 0 {
			// A stored sequence at the edges of the message's jump bound.
			bound := cmp.Or(c.msg.w.MaxSequenceJump, c.maxJump, engine.DefaultMaxSequenceJump)
			s := sat(*c.msg.w.Sequence, pick(r, []int64{0, 1, -1, bound, -bound, bound + 1, -bound - 1}))
			c.prior.w.Sequence = &s
			if r.IntN(3) != 0 && !c.msg.ev.PublishTime.IsZero() {
				// Published across the window from the message, with event
				// times that do not make the later one newer: only the
				// sequence step can.
				d := c.window + time.Duration(1+r.IntN(2))*time.Microsecond
				pt := c.msg.ev.PublishTime
				if r.IntN(2) == 0 { // the stored version is the earlier
					c.prior.ev.PublishTime, c.prior.w.EventTime = pt.Add(-d), pt.Add(-d)
					c.msg.w.EventTime = pt.Add(-d - time.Second)
				} else {
					c.prior.ev.PublishTime, c.prior.w.EventTime = pt.Add(d), pt.Add(-time.Hour)
					c.msg.w.EventTime = pt
				}
			}
		}
	}
	return c
}

// fingerprintVariant is a stored fingerprint for a message whose own is
// fp: fp, another payload's, none, fp's v1 form alone, or a fingerprint
// whose v1 form is fp's hash (as a record of another payload whose v1 form
// hashes alike).
func fingerprintVariant(r *rand.Rand, fp, other string) string {
	return pick(r, []string{fp, other, "", v1Only(fp), v1Only(other), "sha256:zz+v1:" + strings.TrimPrefix(v1Only(fp), "sha256:")})
}

// sat is a+d saturated at the int64 bounds.
func sat(a, d int64) int64 {
	switch {
	case d > 0 && a > math.MaxInt64-d:
		return math.MaxInt64
	case d < 0 && a < math.MinInt64-d:
		return math.MinInt64
	}
	return a + d
}

// v1Only is a fingerprint's v1 form ("sha256:" and the v1 hash), or the
// fingerprint when it has none.
func v1Only(fp string) string {
	if _, v1, ok := strings.Cut(fp, "+v1:"); ok {
		return "sha256:" + v1
	}
	return fp
}

func genMsg(r *rand.Rand, window time.Duration, payloads [][]byte, idPrefix string) latestMsg {
	offsets := []time.Duration{0, time.Microsecond, -time.Microsecond, window, -window, window + time.Microsecond,
		-window - time.Microsecond, 2 * window, -2 * window, 30 * time.Second, -time.Hour, 2 * time.Hour}
	at := func() time.Duration {
		if r.IntN(4) == 0 {
			return time.Duration(r.Int64N(int64(6*window))) - 3*window
		}
		return pick(r, offsets)
	}
	publish := latestBase.Add(at())
	switch r.IntN(20) {
	case 0:
		publish = time.Time{}
	case 1:
		// At the edge of the clock tolerance ahead of the case's clock
		// (latestCase.now): beyond it the time received stands in.
		publish = latestBase.Add(time.Hour + engine.ClockTolerance + pick(r, []time.Duration{0, time.Microsecond, -time.Microsecond}))
	}
	ev := engine.Event{MessageID: pick(r, []string{"1", "2", "10", idPrefix + "-a", "Ab", "é", `q"uote`, "zz"}),
		PublishTime: publish, Payload: pick(r, payloads)}
	switch r.IntN(3) {
	case 0:
		ev.EventID = pick(r, []string{"ev1", "ev2"})
	case 1:
		ev.Identity = map[string]any{"k": pick(r, []string{"x", "y"})}
	}
	w := engine.Write{Collection: "docs", ID: "agg", Fields: map[string]any{"v": idPrefix}, EventTime: latestBase.Add(at()), DedupeMarker: r.IntN(4) != 0}
	if r.IntN(2) == 0 {
		s := pick(r, []int64{math.MinInt64, -1, 0, 1, 2, 5, 1_000_000, 1_000_001, math.MaxInt64})
		w.Sequence = &s
	}
	if r.IntN(5) == 0 {
		w.MaxSequenceJump = pick(r, []int64{1, 3})
	}
	return latestMsg{ev: ev, w: w}
}

func pick[T any](r *rand.Rand, vs []T) T { return vs[r.IntN(len(vs))] }

// latestRun is what one engine did with a case.
type latestRun struct {
	result, outcome string
	target, marker  []byte
	logged          string
}

// run sets the case's documents up under a prefix of their own on st and
// delivers its message through an engine on st.
func (c latestCase) run(t *testing.T, st store.Store) latestRun {
	t.Helper()
	ctx := context.Background()
	prefix := fmt.Sprintf("l%d_%d_", c.n, time.Now().UnixNano()%1e9)
	var logBuf ct.Log
	now := c.now
	eng, err := engine.New(engine.Config{Store: st, Env: "prod", CollectionPrefix: prefix, MaxEventSkew: c.window,
		MaxSequenceJump: c.maxJump, Fingerprint: c.mode, Now: func() time.Time { return now },
		MaxWaitingPerDocument: engine.NoCoalescing, Logger: slog.New(slog.NewJSONHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelError}))})
	if err != nil {
		t.Fatal(err)
	}
	setup, err := engine.New(engine.Config{Store: txOnly{st}, Env: "prod", CollectionPrefix: prefix, MaxEventSkew: c.window,
		Now: func() time.Time { return now }, Fingerprint: engine.FingerprintWarn})
	if err != nil {
		t.Fatal(err)
	}
	msg := c.msg
	msg.w.Collection = prefix + "docs"
	target := store.Key{Collection: msg.w.Collection, ID: "prod__agg"}
	if c.prior != nil {
		p := *c.prior
		p.w.Collection, p.w.DedupeMarker = msg.w.Collection, false
		p.w.EventTime, p.ev.PublishTime = latestBase.Add(-24*time.Hour), latestBase.Add(-24*time.Hour)
		if p.w.Sequence != nil {
			s := int64(math.MinInt64)
			p.w.Sequence = &s
		}
		// Applied whatever it carries: the oldest possible version, then
		// its version fields set to the generated ones.
		if _, err := setup.Materialize(ctx, p.ev, p.w); err != nil {
			t.Fatalf("set the stored version up: %v", err)
		}
		c.rewriteVersion(t, st, target, *c.prior)
	}
	if c.marker != "absent" {
		key, err := markerKey(prefix, msg.ev)
		if err != nil {
			t.Fatal(err)
		}
		exp := now.Add(time.Hour)
		if c.marker == "expired" {
			exp = now.Add(-time.Second)
		}
		put(t, st, key, store.Document{Fields: map[string]any{"eventKey": "x", "messageId": "0", "fingerprint": c.markerFP}, ExpireAt: exp})
	}
	res, err := eng.Materialize(ctx, msg.ev, msg.w)
	out := latestRun{result: fmt.Sprintf("outcome %q write %q warning %t reads %d writes %d idem %s error %v",
		res.Outcome, res.WriteKind, res.Warning != "", res.Ops.Reads, res.Ops.Writes, strings.TrimPrefix(res.IdempotencyDoc, prefix), errSummary(err))}
	out.outcome = string(res.Outcome)
	if err != nil {
		out.outcome = errSummary(err)
	}
	out.target = encoded(t, st, target)
	if key, err := markerKey(prefix, msg.ev); err == nil {
		out.marker = encoded(t, st, key)
	}
	for _, l := range logBuf.Lines(t) {
		out.logged += fmt.Sprint(l)
	}
	// The documents' expiry and createdAt are the case's clock: comparable
	// across the two runs but for the prefix.
	out.target = bytes.ReplaceAll(out.target, []byte(prefix), nil)
	out.marker = bytes.ReplaceAll(out.marker, []byte(prefix), nil)
	return out
}

// rewriteVersion gives the stored target the prior message's version as
// the engine would record it, or one of the forms only the engine reads.
func (c latestCase) rewriteVersion(t *testing.T, st store.Store, key store.Key, p latestMsg) {
	t.Helper()
	d := get(t, st, key)
	fields := map[string]any{}
	for k, v := range d.Fields {
		fields[k] = v
	}
	meta := map[string]any{}
	for k, v := range fields[engine.MetaField].(map[string]any) {
		meta[k] = v
	}
	// The version the engine would record for p received at the case's
	// clock: its publish time as trusted, its event time as sent.
	publish := engine.TrustedPublishTime(p.ev.PublishTime, c.now)
	evTime := p.w.EventTime.UTC().Truncate(time.Microsecond)
	meta["eventTime"], meta["publishTime"], meta["messageId"] = evTime, publish, p.ev.MessageID
	delete(meta, "sequence")
	if p.w.Sequence != nil {
		meta["sequence"] = *p.w.Sequence
	}
	if c.storedFP == "" {
		delete(meta, "fingerprint")
	} else {
		meta["fingerprint"] = c.storedFP
	}
	switch c.target {
	case "nanosecond time":
		meta["eventTime"] = evTime.Add(time.Nanosecond)
	case "float sequence":
		meta["sequence"] = 2.0
	case "escaped message id":
		meta["messageId"] = "a\nb"
	case "no version":
		delete(fields, engine.MetaField)
	case "version not a map":
		fields[engine.MetaField] = "v"
	case "time with another key":
		meta["eventTime"] = map[string]any{"$eventpipe_time": evTime.Format(time.RFC3339Nano), "x": 1}
	}
	if _, ok := fields[engine.MetaField]; ok && c.target != "version not a map" {
		fields[engine.MetaField] = meta
	}
	doc := store.Document{Fields: fields}
	if c.target == "expired" {
		doc.ExpireAt = c.now.Add(-time.Second)
	}
	put(t, st, key, doc)
}

// markerKey is the dedupe marker of ev under prefix (Engine's envKey of
// the event key).
func markerKey(prefix string, ev engine.Event) (store.Key, error) {
	var k string
	var err error
	if ev.EventID != "" || len(ev.Identity) > 0 {
		k, err = keys.LogicalKey(ev.EventID, ev.Identity)
	} else {
		var e string
		e, err = keys.EscapeID(ev.MessageID)
		k = "m-" + e
	}
	return store.Key{Collection: prefix + "dedupe", ID: "prod__" + k}, err
}

func errSummary(err error) string {
	if err == nil {
		return "none"
	}
	typ, code := engine.Classify(err)
	return fmt.Sprintf("%s/%s", typ, code)
}

func put(t *testing.T, st store.Store, key store.Key, doc store.Document) {
	t.Helper()
	if err := st.RunTx(context.Background(), func(ctx context.Context, tx store.Tx) error { return tx.Set(ctx, key, doc) }); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, st store.Store, key store.Key) store.Document {
	t.Helper()
	var d store.Document
	err := st.RunTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		var err error
		d, err = tx.Get(ctx, key)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// encoded is the document's encoding with its expiry, or nil.
func encoded(t *testing.T, st store.Store, key store.Key) []byte {
	t.Helper()
	var out []byte
	err := st.RunTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		d, err := tx.Get(ctx, key)
		if err != nil {
			if strings.Contains(err.Error(), store.ErrNotFound.Error()) {
				out = nil
				return nil
			}
			return err
		}
		enc, err := store.EncodeJSON(d)
		out = append(enc, []byte(" expires "+d.ExpireAt.Format(time.RFC3339Nano))...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestLatestWriterConcurrentDeliveries: deliveries of one set of events,
// each sent several times, concurrently and in a random order, with
// coalescing off so that each runs its own WriteLatest at once, converge on
// the newest event of each document, apply each event once, and leave
// every other delivery a duplicate or stale; as the engine's own
// transactions do.
func TestLatestWriterConcurrentDeliveries(t *testing.T) {
	s := openPG(t)
	for _, tc := range []struct {
		name string
		st   store.Store
	}{{"WriteLatest", s}, {"engine transaction", txOnly{s}}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			prefix := fmt.Sprintf("c%d_", time.Now().UnixNano()%1e9)
			eng, err := engine.New(engine.Config{Store: tc.st, Env: "prod", CollectionPrefix: prefix, MaxWaitingPerDocument: engine.NoCoalescing})
			if err != nil {
				t.Fatal(err)
			}
			r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
			const docs, events, copies = 4, 12, 3
			type delivery struct {
				doc, event int
				seq        int64
			}
			var ds []delivery
			seqs := map[[2]int]int64{}
			for d := range docs {
				for e := range events {
					seq := r.Int64N(1000) // ties broken by the other fields
					seqs[[2]int{d, e}] = seq
					for range copies {
						ds = append(ds, delivery{d, e, seq})
					}
				}
			}
			r.Shuffle(len(ds), func(i, j int) { ds[i], ds[j] = ds[j], ds[i] })
			applied := map[[2]int]int{}
			var mu sync.Mutex
			var wg sync.WaitGroup
			next := make(chan delivery)
			for range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for d := range next {
						seq := d.seq
						ev := engine.Event{MessageID: fmt.Sprintf("m-%d-%d", d.doc, d.event), EventID: fmt.Sprintf("e-%d-%d", d.doc, d.event),
							PublishTime: latestBase.Add(time.Duration(d.event) * time.Second), Payload: []byte(fmt.Sprintf(`{"e":%d}`, d.event))}
						res, err := eng.Materialize(ctx, ev, engine.Write{Collection: prefix + "docs", ID: fmt.Sprint("agg", d.doc),
							Fields: map[string]any{"event": int64(d.event)}, EventTime: latestBase, Sequence: &seq, DedupeMarker: true})
						if err != nil {
							t.Errorf("delivery %v: %v", d, err)
							continue
						}
						if res.Outcome == engine.Applied {
							mu.Lock()
							applied[[2]int{d.doc, d.event}]++
							mu.Unlock()
						}
					}
				}()
			}
			for _, d := range ds {
				next <- d
			}
			close(next)
			wg.Wait()
			for d := range docs {
				// The newest: highest sequence, then the latest publish time.
				best := 0
				for e := range events {
					if k, b := seqs[[2]int{d, e}], seqs[[2]int{d, best}]; k > b || (k == b && e > best) {
						best = e
					}
				}
				got := get(t, tc.st, store.Key{Collection: prefix + "docs", ID: fmt.Sprint("prod__agg", d)})
				if ev, _ := got.Fields["event"].(int64); ev != int64(best) {
					t.Errorf("document %d holds event %d, want the newest, %d", d, ev, best)
				}
				if applied[[2]int{d, best}] != 1 {
					t.Errorf("the newest event of document %d was applied %d times, want once", d, applied[[2]int{d, best}])
				}
			}
			for k, n := range applied {
				if n > 1 {
					t.Errorf("event %v applied %d times", k, n)
				}
			}
			keys := slices.Collect(func(yield func([2]int) bool) {
				for k := range applied {
					if !yield(k) {
						return
					}
				}
			})
			t.Logf("%d events applied of %d delivered %d times each", len(keys), docs*events, copies)
		})
	}
}
