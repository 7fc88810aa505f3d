package settings

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func lookup(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// target is the address of the field f binds.
func (f field) target() any {
	for _, p := range []any{f.str, f.list, f.num, f.num64, f.dur} {
		if !reflect.ValueOf(p).IsNil() {
			return p
		}
	}
	return nil
}

// TestEveryFieldIsOneVariable: each field of Env is bound to exactly one variable, each
// variable to one field, and every name is listed once (Vars): a field added without its
// variable, or a variable written twice, fails here.
func TestEveryFieldIsOneVariable(t *testing.T) {
	var e Env
	bound := map[any]string{}
	for _, f := range e.fields() {
		p := f.target()
		if p == nil {
			t.Fatalf("%s is bound to no field", f.Name)
		}
		if other, dup := bound[p]; dup {
			t.Errorf("%s and %s are bound to the same field", f.Name, other)
		}
		bound[p] = f.Name
		if f.Doc == "" || f.Type == "" {
			t.Errorf("%s has no documentation or type", f.Name)
		}
	}
	v := reflect.ValueOf(&e).Elem()
	for i := range v.NumField() {
		if _, ok := bound[v.Field(i).Addr().Interface()]; !ok {
			t.Errorf("Env.%s is read from no variable", v.Type().Field(i).Name)
		}
	}
	names := map[string]bool{}
	for _, x := range Vars() {
		if names[x.Name] {
			t.Errorf("%s is listed twice", x.Name)
		}
		names[x.Name] = true
	}
}

// TestDefaults: an empty environment parses to the defaults, and each default Vars shows
// as a value (not as what it means) is the value Parse applies, written as Value writes it.
func TestDefaults(t *testing.T) {
	e, err := Parse(lookup(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(e, Default()) {
		t.Fatalf("Parse of nothing %+v, Default %+v", e, Default())
	}
	checked := 0
	for _, f := range e.fields() {
		if f.Default != "" {
			checked++
			if got := e.Value(f.Name); got != f.Default {
				t.Errorf("%s: documented default %q, applied %q", f.Name, f.Default, got)
			}
		}
		if f.Default != "" && f.Unset != "" {
			t.Errorf("%s: documented with both a default value and a meaning", f.Name)
		}
	}
	if checked < 15 {
		t.Fatalf("only %d defaults checked", checked)
	}
	if e.Store != DefaultStore() || e.CallbackAudience != "" || e.DLQ != "auto" || e.RequestTimeout != time.Minute || e.CoalesceMaxWaiting != 256 {
		t.Fatalf("defaults: %+v", e)
	}
}

// values users set, by kind.
var (
	genStrings = []string{"prod", "orders-consumer", "1.2.3", "sha256:0f3e", "bbolt:///var/lib/eventpipe.db", "postgres://eventpipe@10.0.0.3:5432/eventpipe?sslmode=disable",
		"firestore://acme-prod/(default)", "mem://", "/etc/eventpipe/routes.json", `{"routes":[]}`, "https://orders-xyz.a.run.app/pubsub/push", "acme-dev/orders/pubsub-push",
		"eventpipe_orders_", "ops_", "http://localhost:8081", "https://www.googleapis.com/oauth2/v3/certs", "projection.after_write", "é-unicode-✓"}
	genElements = []string{"orders-main-push@acme-dev.iam.gserviceaccount.com", "billing-jobs@acme-dev.iam.gserviceaccount.com", "projects/acme-dev/subscriptions/orders-work",
		"projects/p/subscriptions/s-1", "sync@acme-ops.iam.gserviceaccount.com"}
)

// generate sets every field of e to a value a user could set, drawn by rng: a string of
// the shapes above (one its check accepts), a list of 0 to 3 elements, an integer at or
// between its bounds, a positive duration in whole days, hours, minutes or seconds or with
// a fraction of a second; and keeps the variables that go together consistent.
func generate(rng *rand.Rand, e *Env) {
	for _, f := range e.fields() {
		switch {
		case f.str != nil:
			for {
				v := genStrings[rng.IntN(len(genStrings))]
				switch f.Name {
				case DLQ:
					v = DLQModes()[rng.IntN(3)]
				case HandlerHealthPath:
					v = "/" + strings.Trim(v, "/{}\"")
				case PprofAddr:
					v = []string{"", "127.0.0.1:6060", "[::1]:0", "localhost:6060", "127.0.0.1:65535"}[rng.IntN(5)]
				}
				if f.check == nil || f.check(v) == "" {
					*f.str = v
					break
				}
			}
		case f.list != nil:
			*f.list = nil
			for range rng.IntN(4) {
				*f.list = append(*f.list, genElements[rng.IntN(len(genElements))])
			}
		case f.num != nil || f.num64 != nil:
			hi := min(f.hi, f.lo+1<<40)
			n := []int64{f.lo, f.hi, f.lo + rng.Int64N(hi-f.lo+1)}[rng.IntN(3)]
			if f.num != nil {
				*f.num = int(n)
			} else {
				*f.num64 = n
			}
		case f.dur != nil:
			unit := []time.Duration{24 * time.Hour, time.Hour, time.Minute, time.Second, time.Millisecond, time.Nanosecond}[rng.IntN(6)]
			*f.dur = time.Duration(1+rng.IntN(5000)) * unit
		}
	}
	if e.OIDCAudience == "" {
		e.PushAccounts = nil
	} else if len(e.PushAccounts) == 0 {
		e.PushAccounts = genElements[:1]
	}
	if len(e.CallbackAccounts) > 0 && e.CallbackAudience == "" {
		e.CallbackAudience = "https://orders.example/callback"
	}
}

// TestValuesRoundTrip: for generated environments, with some variables left unset, what
// Env.Environ writes is read back by Parse as the same Env (an unset variable as its
// default, the callback audience as the push audience), and Value of a variable is its
// text in Environ.
func TestValuesRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(34, 0xb))
	var names []string
	for _, v := range Vars()[:len(Vars())-1] { // not GOMEMLIMIT, which the runtime reads
		names = append(names, v.Name)
	}
	for i := range 2000 {
		var e Env
		generate(rng, &e)
		environ := e.Environ(names...)
		want, def := e, Default()
		for _, f := range want.fields() {
			if rng.IntN(4) > 0 {
				continue
			}
			delete(environ, f.Name)
			if f.follows != nil {
				*f.str = *f.follows
			} else {
				reflect.ValueOf(f.target()).Elem().Set(reflect.ValueOf(def.fieldOf(f.Name)).Elem())
			}
		}
		got, err := Parse(lookup(environ))
		if wantErr := want.consistent(); len(wantErr) > 0 {
			if err == nil {
				t.Fatalf("environment %d %v: accepted, want %v", i, environ, wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("environment %d %v:\nparsed %+v (%v)\nwant   %+v", i, environ, got, err, want)
		}
		for name, v := range environ {
			if got.Value(name) != v {
				t.Fatalf("environment %d: Value(%s) = %q, set %q", i, name, got.Value(name), v)
			}
		}
	}
}

// fieldOf is the address of variable name's field of e.
func (e *Env) fieldOf(name string) any {
	for _, f := range e.fields() {
		if f.Name == name {
			return f.target()
		}
	}
	return nil
}

// TestMalformedValuesAreRefused: a value of the wrong kind, past its bounds or outside its
// allowed values is refused with an error that names the variable, quotes the value and
// says the fix, whatever else is set; an integer variable takes a value exactly when
// strconv.ParseInt reads it within its bounds (every value around the bounds, and text
// that is almost a number); the other variables' errors come in the same error.
func TestMalformedValuesAreRefused(t *testing.T) {
	rng := rand.New(rand.NewPCG(34, 0xbad))
	near := []string{"x", "1e3", "1.0", "+5", "0x10", "07", "99999999999999999999", "-", "١٢", "5 5"}
	for _, f := range new(Env).fields() {
		var bad []string
		switch {
		case f.num != nil || f.num64 != nil:
			for _, n := range []int64{f.lo - 1, f.lo, f.lo + 1, f.hi - 1, f.hi, f.hi + 1} {
				if (n == f.lo-1 && f.lo == math.MinInt64) || (n == f.hi+1 && f.hi == math.MaxInt64) {
					continue // wrapped around
				}
				bad = append(bad, strconv.FormatInt(n, 10))
			}
			if f.hi == math.MaxInt64 || f.hi == math.MaxInt {
				bad = append(bad, "9223372036854775808")
			}
			bad = append(bad, near...)
		case f.dur != nil:
			bad = []string{"soon", "0s", "-1s", "-5m", "1.5d", "10", "1 h", "P1D", fmt.Sprint(rng.IntN(100))}
		case f.check != nil:
			bad = []string{"maybe", "healthz", "ON ", "Auto", "off/on"}
		default:
			continue
		}
		other := ShutdownTimeout // another bad variable beside it, now and then
		if f.Name == other {
			other = RequestTimeout
		}
		for _, v := range bad {
			environ := map[string]string{f.Name: v, Service: "orders-consumer"}
			if rng.IntN(2) == 0 {
				environ[other] = "never"
			}
			e, err := Parse(lookup(environ))
			accepted := false
			switch {
			case f.num != nil || f.num64 != nil:
				n, perr := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				accepted = perr == nil && n >= f.lo && n <= f.hi
			case f.dur != nil:
				accepted = false
			case f.check != nil:
				accepted = f.check(strings.TrimSpace(v)) == ""
			}
			prefix := fmt.Sprintf("%s=%q: ", f.Name, strings.TrimSpace(v))
			named := err != nil && strings.Contains(err.Error(), prefix)
			switch {
			case accepted && named:
				t.Errorf("%s=%q is within the rules, refused: %v", f.Name, v, err)
			case accepted:
				if got := e.Value(f.Name); strings.TrimLeft(got, "0") != strings.TrimLeft(strings.TrimPrefix(strings.TrimSpace(v), "+"), "0") {
					t.Errorf("%s=%q read as %q", f.Name, v, got)
				}
			case !named:
				t.Errorf("%s=%q: error %v, want one starting %s", f.Name, v, err, prefix)
			default:
				fix := f.fix
				if f.dur != nil {
					fix = "use a positive duration such as " + f.def
				}
				if !strings.Contains(err.Error(), prefix+fix) && f.check == nil {
					t.Errorf("%s=%q: error %v does not say the fix %q", f.Name, v, err, fix)
				}
			}
			if _, set := environ[other]; set && (err == nil || !strings.Contains(err.Error(), other+`="never"`)) {
				t.Errorf("%s=%q beside a bad %s: %v does not name both", f.Name, v, other, err)
			}
		}
	}
}

// TestVariablesThatGoTogether: an audience without accounts, accounts without an
// audience, callback accounts with no audience at all are refused, naming the variable
// to set; a callback audience follows the push audience unless set.
func TestVariablesThatGoTogether(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{OIDCAudience: "https://x"}, PushAccounts},
		{map[string]string{PushAccounts: "a@b"}, OIDCAudience},
		{map[string]string{CallbackAccounts: "a@b"}, CallbackAudience},
	} {
		if _, err := Parse(lookup(tc.env)); err == nil || !strings.Contains(err.Error(), tc.want+"=") {
			t.Errorf("%v: %v, want an error naming %s", tc.env, err, tc.want)
		}
	}
	e, err := Parse(lookup(map[string]string{OIDCAudience: "https://x", PushAccounts: "a@b", CallbackAccounts: "j@b"}))
	if err != nil || e.CallbackAudience != "https://x" || !slices.Equal(e.CallbackAccounts, []string{"j@b"}) {
		t.Fatalf("%+v %v", e, err)
	}
}

// updateDocsEnv rewrites docs/consumer.md's table of the variables instead of comparing:
// EVENTPIPE_UPDATE_DOCS=1 go test ./consumer/settings -run TestDocsListTheVariables
const updateDocsEnv = "EVENTPIPE_UPDATE_DOCS"

// The generated table sits between these lines of docs/consumer.md.
const (
	docsPath  = "../../docs/consumer.md"
	docsBegin = "<!-- variables: generated from consumer/settings by TestDocsListTheVariables; do not edit -->\n"
	docsEnd   = "<!-- variables: end -->\n"
)

// variablesTable is the Markdown table of vars: name, type, default (its value, or what
// unset means) and meaning.
func variablesTable(vars []Var) string {
	var b strings.Builder
	b.WriteString("| variable | type | default | meaning |\n| --- | --- | --- | --- |\n")
	for _, v := range vars {
		def := v.Unset
		if v.Default != "" {
			def = "`" + v.Default + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", v.Name, strings.ReplaceAll(v.Type, "|", `\|`), def, strings.ReplaceAll(v.Doc, "|", `\|`))
	}
	return b.String()
}

// TestDocsListTheVariables: docs/consumer.md's table of the consumer's variables is the
// one Vars makes, so a variable, default or meaning changes in one place.
func TestDocsListTheVariables(t *testing.T) {
	doc, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	head, rest, ok := strings.Cut(string(doc), docsBegin)
	_, tail, ok2 := strings.Cut(rest, docsEnd)
	if !ok || !ok2 {
		t.Fatalf("%s has no %q … %q block", docsPath, docsBegin, docsEnd)
	}
	want := head + docsBegin + variablesTable(Vars()) + docsEnd + tail
	if os.Getenv(updateDocsEnv) != "" {
		if err := os.WriteFile(docsPath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if string(doc) != want {
		t.Errorf("%s's table of variables is not the one consumer/settings makes; run %s=1 go test ./consumer/settings -run TestDocsListTheVariables", docsPath, updateDocsEnv)
	}
}

// TestDefaultStoreIsPerUser: with no EVENTPIPE_STORE, the consumer's bbolt file is the
// user's own, in the temporary directory every user of a host shares.
func TestDefaultStoreIsPerUser(t *testing.T) {
	if os.Getuid() < 0 {
		t.Skip("no user id on this platform; its temporary directory is the user's own")
	}
	want := "bbolt://" + filepath.ToSlash(filepath.Join(os.TempDir(), fmt.Sprintf("eventpipe-%d.db", os.Getuid())))
	if got := DefaultStore(); got != want {
		t.Errorf("DefaultStore() = %s, want %s", got, want)
	}
}
