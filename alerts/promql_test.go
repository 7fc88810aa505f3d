package alerts

import (
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
)

// promQLConditions returns every PromQL condition of ps, by policy key.
func promQLConditions(t *testing.T, ps PolicySet) map[string]ConditionSpec {
	t.Helper()
	out := map[string]ConditionSpec{}
	for _, p := range ps.Policies {
		for _, c := range p.Conditions {
			if c.Kind == PromQL {
				out[p.Key] = c
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("the PolicySet has no PromQL condition")
	}
	return out
}

// TestPromQLParses parses every generated query with Prometheus's own
// parser and checks that it reads the metric its condition names, on the
// subscription or consumer it belongs to, and evaluates to a filter (a
// comparison or a set operation), as an alerting rule must.
func TestPromQLParses(t *testing.T) {
	odd := testTarget()
	odd.Pipeline, odd.Env = "orders.v2", "pre-prod"
	odd.Subscriptions[0].Name = "Orders.Push~v2+x%41"
	for _, tg := range []Target{testTarget(), odd} {
		checkPromQL(t, mustPolicySet(t, tg, Defaults()))
	}
}

// checkPromQL parses and inspects every PromQL condition of ps.
func checkPromQL(t *testing.T, ps PolicySet) {
	for key, c := range promQLConditions(t, ps) {
		t.Run(key, func(t *testing.T) {
			expr, err := parser.ParseExpr(c.Query)
			if err != nil {
				t.Fatalf("query does not parse: %v\n%s", err, c.Query)
			}
			if expr.Type() != parser.ValueTypeVector {
				t.Fatalf("query type = %s, want an instant vector", expr.Type())
			}
			want := promName(c.MetricType)
			var names []string
			var sawMetric bool
			parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
				vs, ok := n.(*parser.VectorSelector)
				if !ok {
					return nil
				}
				names = append(names, vs.Name)
				if vs.Name == want {
					sawMetric = true
				}
				// Every selector names its monitored resource: log-based
				// metrics map to several resource types.
				var hasResource bool
				for _, m := range vs.LabelMatchers {
					if m.Name == "monitored_resource" {
						hasResource = true
					}
				}
				if !hasResource {
					t.Errorf("selector %s has no monitored_resource matcher", vs)
				}
				return nil
			})
			if !sawMetric {
				t.Errorf("query reads %v, want metric %s", names, want)
			}
			if sub := strings.Split(key, "/")[0]; strings.Contains(key, "/") && !strings.Contains(c.Query, `subscription_id="`+sub+`"`) {
				t.Errorf("query does not select subscription %s:\n%s", sub, c.Query)
			}
			switch root := unparen(expr).(type) {
			case *parser.BinaryExpr:
				if !root.Op.IsComparisonOperator() && !root.Op.IsSetOperator() {
					t.Errorf("query's top operator is %s, want a comparison or and/or", root.Op)
				}
			default:
				t.Errorf("query's top node is %T, want a comparison or and/or", root)
			}
		})
	}
}

// unparen strips enclosing parentheses.
func unparen(e parser.Expr) parser.Expr {
	for {
		p, ok := e.(*parser.ParenExpr)
		if !ok {
			return e
		}
		e = p.Expr
	}
}

// TestPromQLParserRejectsBrokenQueries shows the parse check can fail: the
// same queries, damaged the way a template bug would damage them, are
// rejected.
func TestPromQLParserRejectsBrokenQueries(t *testing.T) {
	ps := mustPolicySet(t, testTarget(), Defaults())
	damage := map[string]func(string) string{
		"unbalanced parenthesis":  func(q string) string { return "(" + q },
		"unclosed label matchers": func(q string) string { return strings.Replace(q, "}[", "[", 1) },
		"dangling operator":       func(q string) string { return q + " and" },
		"unquoted label value":    func(q string) string { return strings.Replace(q, `="`, `=`, 1) },
	}
	for key, c := range promQLConditions(t, ps) {
		for name, f := range damage {
			bad := f(c.Query)
			if bad == c.Query {
				continue
			}
			if _, err := parser.ParseExpr(bad); err == nil {
				t.Errorf("%s, %s: parser accepted %q", key, name, bad)
			}
		}
	}
}

func TestPromName(t *testing.T) {
	for in, want := range map[string]string{
		"pubsub.googleapis.com/subscription/push_request_count":       "pubsub_googleapis_com:subscription_push_request_count",
		"logging.googleapis.com/user/eventpipe/prod/orders/outcomes":  "logging_googleapis_com:user_eventpipe_prod_orders_outcomes",
		"logging.googleapis.com/user/eventpipe/dev/my-pipe.v2/poison": "logging_googleapis_com:user_eventpipe_dev_my_pipe_v2_poison",
		"compute.googleapis.com/instance/cpu/utilization":             "compute_googleapis_com:instance_cpu_utilization",
	} {
		if got := promName(in); got != want {
			t.Errorf("promName(%q) = %q, want %q", in, got, want)
		}
	}
}
