package pushload_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/eventpipe/eventpipe/consumer/envelope"
	"github.com/eventpipe/eventpipe/internal/testing/gobuild"
	"github.com/eventpipe/eventpipe/internal/testing/pgtest"
	"github.com/eventpipe/eventpipe/internal/testing/pushload"
)

// TestMessagesArePushesOfTheDefaultRoute: every generated body is a push
// envelope the consumer decodes, of a system event of the document the
// bare loop writes for it.
func TestMessagesArePushesOfTheDefaultRoute(t *testing.T) {
	msgs := pushload.Messages("t", 50, 7)
	for i, m := range msgs {
		msg, err := envelope.DecodePush(m.Body)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		var payload struct{ Service string }
		if err := json.Unmarshal(msg.Data, &payload); err != nil {
			t.Fatal(err)
		}
		if want := "bench__" + payload.Service; m.DocID != want {
			t.Errorf("message %d updates %s, its payload %s", i, m.DocID, want)
		}
	}
}

// TestBareContendersApplyOnceInOrder: the bare loop and the bare HTTP
// endpoint (command barehttp, its own process, as pushload runs it) are
// correct applies, or their speed would be no yardstick: whatever the
// order of delivery and however many copies arrive, concurrently, each
// document ends with its newest message and each message's marker is
// written once, as the message says.
func TestBareContendersApplyOnceInOrder(t *testing.T) {
	ctx := context.Background()
	pg := pgtest.Start(t, pgtest.NoSync("checks what the bare contenders write, no timing"))
	bin := t.TempDir()
	if err := gobuild.Build(ctx, "", bin, "./cmd/barehttp"); err != nil {
		t.Fatal(err)
	}
	const n, docs, senders = 300, 20, 8
	for _, tc := range []struct {
		name string
		// open returns the contender's send on the database at url.
		open func(t *testing.T, url string) func(context.Context, *pushload.Message) error
	}{
		{pushload.BareName, func(t *testing.T, url string) func(context.Context, *pushload.Message) error {
			b, err := pushload.OpenBare(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(b.Close)
			return b.Send
		}},
		{pushload.BareHTTPName, func(t *testing.T, url string) func(context.Context, *pushload.Message) error {
			p, err := pushload.StartConsumer(ctx, pushload.Consumer{Name: pushload.BareHTTPName, Bin: filepath.Join(bin, "barehttp")}, url, senders)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := p.Stop(); err != nil {
					t.Errorf("stop: %v", err)
				}
			})
			return p.Send
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, err := pg.NewDatabase(ctx, strings.ReplaceAll(tc.name, "-", "_"))
			if err != nil {
				t.Fatal(err)
			}
			send := tc.open(t, url)
			msgs := pushload.Messages("order", n, docs)
			var deliveries []pushload.Message
			for _, m := range msgs {
				for range 1 + rand.IntN(3) {
					deliveries = append(deliveries, m)
				}
			}
			rand.Shuffle(len(deliveries), func(i, j int) { deliveries[i], deliveries[j] = deliveries[j], deliveries[i] })
			if r := pushload.Drive(ctx, senders, deliveries, send); r.Errors > 0 {
				t.Fatalf("%d deliveries failed", r.Errors)
			}
			conn, err := pgx.Connect(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			var markers int
			if err := conn.QueryRow(ctx, "SELECT count(*) FROM eventpipe_documents WHERE collection = 'eventpipe_dedupe'").Scan(&markers); err != nil {
				t.Fatal(err)
			}
			if markers != n {
				t.Errorf("%d markers for %d messages", markers, n)
			}
			for i, m := range msgs {
				var data []byte
				if err := conn.QueryRow(ctx, "SELECT data::text FROM eventpipe_documents WHERE collection = 'eventpipe_dedupe' AND id = $1", m.MarkerID).Scan(&data); err != nil {
					t.Fatalf("marker of message %d: %v", i, err)
				}
				if !bytes.Equal(compact(t, data), compact(t, m.Marker)) {
					t.Errorf("marker %s holds %s, want %s", m.MarkerID, data, m.Marker)
				}
				if i < n-docs {
					continue
				}
				// the newest message of its document
				if err := conn.QueryRow(ctx, "SELECT data::text FROM eventpipe_documents WHERE collection = 'ops_services' AND id = $1", m.DocID).Scan(&data); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(compact(t, data), compact(t, m.Doc)) {
					t.Errorf("%s holds %s, want its newest message's %s", m.DocID, data, m.Doc)
				}
			}
		})
	}
}

// TestBareHTTPDecodesWhatTheBareLoopWrites: the bare HTTP endpoint derives
// from every generated push exactly the writes the bare loop is given for
// it, so the two do the same work per message.
func TestBareHTTPDecodesWhatTheBareLoopWrites(t *testing.T) {
	for i, m := range pushload.Messages("d", 500, 37) {
		got, err := pushload.DecodePush(bytes.NewReader(m.Body))
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if got.DocID != m.DocID || got.MarkerID != m.MarkerID || !bytes.Equal(got.Doc, m.Doc) || !bytes.Equal(got.Marker, m.Marker) {
			t.Fatalf("message %d decodes to %s %s %s %s, the bare loop writes %s %s %s %s", i,
				got.DocID, got.MarkerID, got.Doc, got.Marker, m.DocID, m.MarkerID, m.Doc, m.Marker)
		}
	}
}

// TestBareHTTPRefusesWhatItCannotRead: a push missing any field the
// endpoint needs, or with data that is not the event's JSON, is answered
// 400 and writes nothing (the cases are made from a valid push by taking
// each needed field away, and by breaking its data and its JSON).
func TestBareHTTPRefusesWhatItCannotRead(t *testing.T) {
	m := pushload.Messages("r", 1, 1)[0]
	var env map[string]any
	if err := json.Unmarshal(m.Body, &env); err != nil {
		t.Fatal(err)
	}
	msg := env["message"].(map[string]any)
	data, err := base64.StdEncoding.DecodeString(msg["data"].(string))
	if err != nil {
		t.Fatal(err)
	}
	var payload map[string]any
	if err := json.Unmarshal(data, &payload); err != nil {
		t.Fatal(err)
	}
	// with returns the push with message field k set to v (nil: removed),
	// or, for "data.K", the event's field K.
	with := func(k string, v any) []byte {
		e := maps.Clone(msg)
		p := maps.Clone(payload)
		if field, ok := strings.CutPrefix(k, "data."); ok {
			if v == nil {
				delete(p, field)
			} else {
				p[field] = v
			}
			raw, _ := json.Marshal(p)
			e["data"] = base64.StdEncoding.EncodeToString(raw)
		} else if v == nil {
			delete(e, k)
		} else {
			e[k] = v
		}
		body, _ := json.Marshal(map[string]any{"message": e, "subscription": env["subscription"]})
		return body
	}
	cases := map[string][]byte{
		"not JSON":            m.Body[:len(m.Body)/2],
		"data not base64":     with("data", "%%%"),
		"data not JSON":       with("data", base64.StdEncoding.EncodeToString([]byte("{"))),
		"producedAt no time":  with("data.producedAt", "yesterday"),
		"publishTime no time": with("publishTime", "yesterday"),
	}
	for _, k := range []string{"data", "messageId", "publishTime", "data.service", "data.producedAt"} {
		cases["no "+k] = with(k, nil)
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := pushload.DecodePush(bytes.NewReader(body)); err == nil {
				t.Errorf("decoded %s", body)
			}
			// nil Bare: a push that reached the database would panic
			rec := httptest.NewRecorder()
			pushload.BareHTTP(nil).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/pubsub/push", bytes.NewReader(body)))
			if rec.Code != http.StatusBadRequest {
				t.Errorf("status %d, want 400", rec.Code)
			}
		})
	}
	if _, err := pushload.DecodePush(bytes.NewReader(with("attributes", nil))); err != nil {
		t.Errorf("a push without the fields the endpoint does not read: %v", err)
	}
}

func compact(t *testing.T, b []byte) []byte {
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestSummaryRatiosAreRoundByRound: each ratio is the median of ratios
// taken within a round, where the contenders ran under the same load, not
// a ratio of medians.
func TestSummaryRatiosAreRoundByRound(t *testing.T) {
	run := func(name string, secs float64, p99 time.Duration) pushload.Run {
		lat := make([]time.Duration, 100)
		for i := range lat {
			lat[i] = p99
		}
		return pushload.Run{Contender: name, Concurrency: 8, Messages: 1000, Elapsed: time.Duration(secs * float64(time.Second)), Latencies: lat}
	}
	// Round 1 at a high load (everything 4x slower), round 2 and 3 quiet:
	// this reaches 0.8 of the bare loop in every round.
	runs := []pushload.Run{
		run("bare", 4, 40*time.Millisecond), run("base", 8, 80*time.Millisecond), run("this", 5, 60*time.Millisecond),
		run("bare", 1, 10*time.Millisecond), run("base", 2, 20*time.Millisecond), run("this", 1.25, 15*time.Millisecond),
		run("bare", 1, 10*time.Millisecond), run("base", 2, 20*time.Millisecond), run("this", 1.25, 15*time.Millisecond),
	}
	var out strings.Builder
	pushload.Summarize(&out, runs, []string{"base", "this"})
	for _, want := range []string{"this / bare: throughput 0.80 [0.80 0.80 0.80]", "base / bare: throughput 0.50 [0.50 0.50 0.50]",
		"this / base: throughput 1.60 [1.60 1.60 1.60]", "p99 1.50 [1.50 1.50 1.50] (goal <= 2)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
}
