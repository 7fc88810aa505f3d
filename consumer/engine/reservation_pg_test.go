package engine_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/eventpipe/eventpipe/consumer/engine"
	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/pgstore"
)

var (
	reservationCases = flag.Int("reservation-cases", 40, "generated sequences of TestConditionalWritesDecideAsTheTransaction")
	reservationSeed  = flag.Uint64("reservation-seed", 0, "seed of TestConditionalWritesDecideAsTheTransaction's generator (0: a new one, logged)")
)

// conditionalCounter passes WriteIf through and counts the writes it
// tried and made.
type conditionalCounter struct {
	store.Store
	cw             store.ConditionalWriter
	mu             sync.Mutex
	tried, written map[bool]int // by IfAbsent
}

func (c *conditionalCounter) WriteIf(ctx context.Context, w store.ConditionalWrite) (store.ConditionalResult, error) {
	res, err := c.cw.WriteIf(ctx, w)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tried[w.IfAbsent]++
	if res.Written {
		c.written[w.IfAbsent]++
	}
	return res, err
}

// TestConditionalWritesDecideAsTheTransaction is the property that lets a
// reservation's claim of a new key and its holder's writes (extend,
// settle, release) go through pgstore's one-statement WriteIf: for any
// sequence of claims (API keys and events, the same or another payload,
// attempts bounded or not), extends, settlements and releases by any
// holder (the current one or one taken over), with the clock moving
// across the lease and the record's TTL, the engine on WriteIf gives the
// same answers (reservation, error type and code) and leaves the same
// records, byte for byte, as the engine running its own transactions on
// a copy of the same world; and WriteIf does write (a new key's claim, a
// current holder's write), so the test is not passing through the
// fallback alone.
func TestConditionalWritesDecideAsTheTransaction(t *testing.T) {
	s, url := openPGURL(t)
	db, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close(context.Background()) })
	cc := &conditionalCounter{Store: s, cw: s, tried: map[bool]int{}, written: map[bool]int{}}
	seed := *reservationSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -reservation-seed %d)", seed, seed)
	r := rand.New(rand.NewPCG(seed, 1))
	answers := map[string]int{}
	for i := range *reservationCases {
		runReservationCase(t, db, s, cc, r, i, answers)
	}
	t.Logf("WriteIf tried %v, wrote %v (by IfAbsent); answers %v", cc.tried, cc.written, answers)
	if cc.written[true] == 0 || cc.written[false] == 0 || cc.tried[true] == cc.written[true] || cc.tried[false] == cc.written[false] {
		t.Fatalf("the generator covers too little: WriteIf tried %v and wrote %v", cc.tried, cc.written)
	}
	for _, a := range []string{"claimed", "replayed", "in_progress", "FINGERPRINT_MISMATCH", "FENCED", "poison"} {
		if answers[a] == 0 {
			t.Fatalf("the generator never gave %q: %v", a, answers)
		}
	}
}

// reservationWorld is one engine and the reservations its claims returned.
type reservationWorld struct {
	eng    *engine.Engine
	prefix string
	held   []engine.Reservation
}

func runReservationCase(t *testing.T, db *pgx.Conn, s *pgstore.Store, cc *conditionalCounter, r *rand.Rand, n int, answers map[string]int) {
	t.Helper()
	const lease, ttl = 10 * time.Second, 60 * time.Second
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	open := func(st store.Store, prefix string) *reservationWorld {
		eng, err := engine.New(engine.Config{Store: st, Env: "prod", CollectionPrefix: prefix, Now: clock,
			LeaseDuration: lease, DedupeTTL: ttl, ReceiptTTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		return &reservationWorld{eng: eng, prefix: prefix}
	}
	fast, general := open(cc, fmt.Sprintf("f%d_", n)), open(txOnly{s}, fmt.Sprintf("g%d_", n))
	ctx := context.Background()
	var log []string
	for step := range 30 {
		var what string
		var do func(w *reservationWorld) string
		switch k := r.IntN(10); {
		case k < 4 || len(fast.held) == 0:
			req := genReservationRequest(r, lease)
			what = fmt.Sprintf("claim %s", reqString(req))
			do = func(w *reservationWorld) string {
				rv, err := w.eng.Claim(ctx, req)
				if err == nil && !rv.Replayed {
					w.held = append(w.held, rv)
				}
				return answer(rv, err)
			}
		case k < 6:
			h := r.IntN(len(fast.held))
			st := []string{engine.StatusCompleted, engine.StatusRejected}[r.IntN(2)]
			res := map[string]any{"status": int64(200 + r.IntN(300)), "body": fmt.Sprintf("r%d", step)}
			what = fmt.Sprintf("settle holder %d %s %v", h, st, res)
			do = func(w *reservationWorld) string {
				rv, err := w.eng.Settle(ctx, w.held[h], engine.Settlement{Status: st, Result: res})
				return answer(rv, err)
			}
		case k < 8:
			h, inDoubt := r.IntN(len(fast.held)), r.IntN(2) == 0
			what = fmt.Sprintf("release holder %d inDoubt %v", h, inDoubt)
			do = func(w *reservationWorld) string {
				exhausted, err := w.eng.Release(ctx, w.held[h], fmt.Errorf("HTTP 503 at step %d", step), inDoubt)
				return fmt.Sprintf("exhausted %v %s", exhausted, answer(engine.Reservation{}, err))
			}
		case k < 9:
			h := r.IntN(len(fast.held))
			what = fmt.Sprintf("extend holder %d", h)
			do = func(w *reservationWorld) string {
				rv, err := w.eng.Extend(ctx, w.held[h])
				if err == nil {
					w.held[h] = rv
				}
				return answer(rv, err)
			}
		default:
			d := []time.Duration{time.Microsecond, 500 * time.Nanosecond, 3 * time.Second, lease, lease + time.Microsecond, 25 * time.Second, ttl}[r.IntN(7)]
			what = fmt.Sprintf("clock +%s", d)
			do = func(*reservationWorld) string { return "" }
			now = now.Add(d)
		}
		a, b := strings.ReplaceAll(do(fast), fast.prefix, "P_"), strings.ReplaceAll(do(general), general.prefix, "P_")
		log = append(log, fmt.Sprintf("%2d %s -> %s", step, what, a))
		if a != b {
			t.Fatalf("case %d, step %d: %s\nwith WriteIf:           %s\nthe engine's own transactions: %s\nsteps:\n%s", n, step, what, a, b, strings.Join(log, "\n"))
		}
		if ra, rb := records(t, db, fast.prefix), records(t, db, general.prefix); ra != rb {
			t.Fatalf("case %d, step %d: %s -> %s\nrecords with WriteIf:\n%s\nrecords of the engine's own transactions:\n%s\nsteps:\n%s", n, step, what, a, ra, rb, strings.Join(log, "\n"))
		}
		if key, _, _ := strings.Cut(a, " "); key != "" {
			answers[key]++
		}
	}
}

// genReservationRequest is an API key's request or an event's delivery:
// one of a few keys, with one of two payloads (the second a reused key),
// attempts bounded or not.
func genReservationRequest(r *rand.Rand, lease time.Duration) engine.Request {
	key := fmt.Sprintf("k%d", r.IntN(3))
	payload := []byte(fmt.Sprintf(`{"key":%q,"v":%d}`, key, r.IntN(4)/3))
	req := engine.Request{Scope: "orders", Lease: lease}
	if r.IntN(2) == 0 {
		req.ID, req.Payload = key, payload
		req.Fields = map[string]any{"method": "POST", "key": key}
	} else {
		req.Event = &engine.Event{MessageID: fmt.Sprintf("m%d", r.IntN(1000)), EventID: key, Payload: payload}
	}
	if r.IntN(2) == 0 {
		req.MaxAttempts = 2
	}
	return req
}

func reqString(r engine.Request) string {
	if r.Event != nil {
		return fmt.Sprintf("event %s payload %s maxAttempts %d", r.Event.EventID, r.Event.Payload, r.MaxAttempts)
	}
	return fmt.Sprintf("id %s payload %s maxAttempts %d", r.ID, r.Payload, r.MaxAttempts)
}

// answer is what a caller sees of a reservation call: its error's type and
// code first, or "claimed"/"replayed" and the reservation's fields.
func answer(rv engine.Reservation, err error) string {
	head := "claimed"
	if rv.Replayed {
		head = "replayed"
	}
	if err != nil {
		typ, code := engine.Classify(err)
		head = string(typ)
		if code == "FENCED" || code == "FINGERPRINT_MISMATCH" {
			head = code
		}
		head += " " + code
	}
	return fmt.Sprintf("%s doc %s status %s result %v token %d attempt %d inDoubt %v until %s tookOver %v received %s heldUntil %s", head,
		rv.Doc, rv.Status, rv.Result, rv.Token, rv.Attempt, rv.PreviousInDoubt, rv.Until.Format(time.RFC3339Nano), rv.TookOver,
		rv.ReceivedAt.Format(time.RFC3339Nano), rv.HeldUntil.Format(time.RFC3339Nano))
}

// records lists every record under prefix (the prefix cut from its
// collection and data), with its data as stored and its expiry.
func records(t *testing.T, db *pgx.Conn, prefix string) string {
	t.Helper()
	rows, err := db.Query(context.Background(), "SELECT collection, id, data::text, expire_at FROM "+pgstore.Table+
		" WHERE starts_with(collection, $1) ORDER BY collection, id", prefix)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for rows.Next() {
		var c, id, data string
		var exp *time.Time
		if err := rows.Scan(&c, &id, &data, &exp); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s/%s %s expires %v\n", c, id, data, exp)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(b.String(), prefix, "P_")
}
