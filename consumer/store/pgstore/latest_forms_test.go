package pgstore

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/eventpipe/eventpipe/internal/testing/pgtest"
)

// The checks sqlWriteLatest makes of a stored version's form (timeForm,
// integerForm) replaced regular expressions and jsonb tests that cost more
// on the server. These tests hold each to the expression it replaced, on
// PostgreSQL, for generated values around every edge of the form: the two
// must agree on every value (NULL, which the statement reads as true, is
// taken as true), or the statement would decide a stored version the
// engine reads otherwise, or leave one to the engine it used to decide.

// isTimeBefore is the regular expression the time check was.
const isTimeBefore = `^(000[1-9]|00[1-9][0-9]|0[1-9][0-9]{2}|[1-9][0-9]{3})-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?Z$`

// timeOKBefore is the time check as it was, of the jsonb value x.
const timeOKBefore = `CASE WHEN x IS NULL THEN true WHEN jsonb_typeof(x) <> 'object' THEN false
	ELSE (x - '$eventpipe_time') = '{}'::jsonb AND (x->>'$eventpipe_time') ~ '` + isTimeBefore + `' END`

// sequenceOKBefore is the sequence check as it was, of the json object m.
const sequenceOKBefore = `(NOT m::jsonb ? 'sequence' OR (jsonb_typeof(m::jsonb->'sequence') = 'number' AND (m->'sequence')::text ~ '^-?[0-9]+$'))`

func TestTimeFormAgreesWithTheCheckItReplaced(t *testing.T) {
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0))
	values := []string{"", "{}", `{"$eventpipe_time": null}`, `{"$eventpipe_time": 5}`, `{"$eventpipe_time": true}`,
		`{"$eventpipe_time": {}}`, `[]`, `"2026-01-02T03:04:05Z"`, `5`, `null`}
	digits := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteByte(byte('0' + r.IntN(10)))
		}
		return b.String()
	}
	for range 4000 {
		year := digits(4)
		switch r.IntN(6) {
		case 0:
			year = "0000"
		case 1:
			year = "000" + digits(1)
		}
		s := year + "-" + digits(2) + "-" + digits(2) + "T" + digits(2) + ":" + digits(2) + ":" + digits(2)
		if n := r.IntN(10); n > 0 {
			s += "." + digits(n-1) // "." alone, and up to eight digits
		}
		s += "Z"
		if r.IntN(3) == 0 { // one character changed, dropped or added
			b := []rune(s)
			i := r.IntN(len(b))
			c := []rune("0123456789-T:.Zz +٣\n\"\\é")[r.IntN(22)]
			switch r.IntN(3) {
			case 0:
				b[i] = c
			case 1:
				b = append(b[:i], b[i+1:]...)
			default:
				b = append(b[:i], append([]rune{c}, b[i:]...)...)
			}
			s = string(b)
		}
		q := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
		key := `"$eventpipe_time"`
		if r.IntN(8) == 0 {
			key = `"\u0024eventpipe_time"` // the same key, escaped
		}
		switch r.IntN(8) {
		case 0:
			values = append(values, `{`+key+`: ["`+q+`"]}`)
		case 1:
			values = append(values, `{`+key+`: "`+q+`", "other": 1}`)
		case 2:
			values = append(values, `"`+q+`"`)
		default:
			values = append(values, `{`+key+`: "`+q+`"}`)
		}
	}
	agree(t, `WITH v AS (SELECT s, CASE WHEN s = '' THEN NULL ELSE s::jsonb END AS x FROM unnest($1::text[]) AS s)
		SELECT s, COALESCE(`+timeOKBefore+`, true), COALESCE(`+timeForm(`x::text`)+`, true) FROM v`, values)
}

func TestIntegerFormAgreesWithTheCheckItReplaced(t *testing.T) {
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0))
	values := []string{`{}`, `{"sequence": null}`, `{"sequence": "12"}`, `{"sequence": "-"}`, `{"sequence": true}`,
		`{"sequence": [1]}`, `{"sequence": {"a": 1}}`, `{"sequence": -0}`, `{"sequence": 0}`, `{"sequence": 1.0}`,
		`{"sequence": 1e3}`, `{"sequence": -1E+2}`, `{"sequence": 99999999999999999999999}`, `{"sequence":  7 }`,
		`{"sequence": 1, "sequence": "x"}`, `{"sequence": "x", "sequence": 1}`}
	for range 2000 {
		n := fmt.Sprint(r.Int64N(1<<62) - 1<<61)
		switch r.IntN(5) {
		case 0:
			n += "." + fmt.Sprint(r.IntN(100))
		case 1:
			n += "e" + fmt.Sprint(r.IntN(5))
		case 2:
			n = `"` + n + `"`
		}
		values = append(values, `{"sequence": `+n+`}`)
	}
	agree(t, `WITH v AS (SELECT s, s::json AS m FROM unnest($1::text[]) AS s)
		SELECT s, COALESCE(`+sequenceOKBefore+`, true), COALESCE(`+integerForm(`(m->'sequence')::text`)+`, true) FROM v`, values)
}

// agree runs query, which returns each value with the check before and
// after, on values and fails on any value they disagree on.
func agree(t *testing.T, query string, values []string) {
	t.Helper()
	ctx := context.Background()
	pg := pgtest.Start(t, pgtest.NoSync("evaluates expressions, no timing"))
	conn, err := pgx.Connect(ctx, pg.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, query, values)
	if err != nil {
		t.Fatal(err)
	}
	n, accepted := 0, 0
	for rows.Next() {
		var s string
		var before, after bool
		if err := rows.Scan(&s, &before, &after); err != nil {
			t.Fatal(err)
		}
		if before != after {
			t.Errorf("%q: the check it replaced says %v, the new one %v", s, before, after)
		}
		n++
		if after {
			accepted++
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n != len(values) || accepted == 0 || accepted == n {
		t.Fatalf("%d values checked of %d, %d accepted: the generator covers too little", n, len(values), accepted)
	}
	t.Logf("%d values, %d in the form", n, accepted)
}

// FuzzJumpBounds: a stored sequence s is within jump of the message's seq
// upwards exactly when s <= high, downwards exactly when s >= low, as
// Ordering.newerAcross computes the step (in numbers without overflow).
func FuzzJumpBounds(f *testing.F) {
	for _, c := range [][3]int64{{0, 0, 0}, {math.MinInt64, 1, math.MinInt64}, {math.MaxInt64, 1, math.MaxInt64},
		{math.MinInt64, math.MaxInt64, math.MaxInt64}, {-1, math.MaxInt64, math.MinInt64}, {5, 3, 8}, {5, 3, 1}} {
		f.Add(c[0], c[1], c[2])
	}
	f.Fuzz(func(t *testing.T, seq, jump, s int64) {
		if jump < 0 {
			jump = -(jump + 1) // every jump the store accepts: 0..MaxInt64
		}
		low, high := jumpBounds(seq, jump)
		step := func(late, early int64) bool { // late - early <= jump, exactly
			d := new(big.Int).Sub(big.NewInt(late), big.NewInt(early))
			return d.Cmp(big.NewInt(jump)) <= 0
		}
		if got, want := s <= high, step(s, seq); got != want {
			t.Errorf("seq %d, jump %d, stored %d: s <= high (%d) is %v, the step upwards within the jump %v", seq, jump, s, high, got, want)
		}
		if got, want := s >= low, step(seq, s); got != want {
			t.Errorf("seq %d, jump %d, stored %d: s >= low (%d) is %v, the step downwards within the jump %v", seq, jump, s, low, got, want)
		}
	})
}
