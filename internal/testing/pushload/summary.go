package pushload

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// BareName is the bare loop's contender name.
const BareName = "bare"

// Goals of issue 35, at every concurrency measured: a consumer's
// throughput at least GoalThroughput of the bare loop's, and at the lowest
// concurrency its p99 at most GoalP99 times the bare loop's.
const (
	GoalThroughput = 0.8
	GoalP99        = 2.0
)

// key groups the runs of one configuration.
type key struct {
	concurrency, messages int
}

// Summarize writes, per configuration (concurrency and message count), each
// contender's medians over the rounds and the per-round values, then the
// ratios: the bare HTTP endpoint (when it ran) against the bare loop, each
// consumer against the bare HTTP endpoint (throughput and the process's CPU
// per message) and against the bare loop, and the last consumer named
// against the first (this release against the previous one). A ratio is
// the median of the rounds' ratios, each taken within one round, where the
// contenders ran back to back under the same load. consumers are the
// consumers' names in the order given.
func Summarize(w io.Writer, runs []Run, consumers []string) {
	var keys []key
	byKey := map[key]map[string][]Run{}
	for _, r := range runs {
		k := key{r.Concurrency, r.Messages}
		if byKey[k] == nil {
			byKey[k] = map[string][]Run{}
			keys = append(keys, k)
		}
		byKey[k][r.Contender] = append(byKey[k][r.Contender], r)
	}
	slices.SortFunc(keys, func(a, b key) int {
		if a.messages != b.messages {
			return a.messages - b.messages
		}
		return a.concurrency - b.concurrency
	})
	lowest := 0
	for _, k := range keys {
		if lowest == 0 || k.concurrency < lowest {
			lowest = k.concurrency
		}
	}
	for _, k := range keys {
		set := byKey[k]
		fmt.Fprintf(w, "\n%d concurrent pushes, %d messages:\n", k.concurrency, k.messages)
		names := append([]string{BareName, BareHTTPName}, consumers...)
		for _, name := range names {
			rs := set[name]
			if len(rs) == 0 {
				continue
			}
			line := fmt.Sprintf("  %-9s %8.0f msgs/s %-26s p50 %6.2f ms  p99 %7.2f ms %-26s", name,
				median(each(rs, Run.PerSecond)), list(each(rs, Run.PerSecond), "%.0f"),
				median(each(rs, q(0.50))), median(each(rs, q(0.99))), list(each(rs, q(0.99)), "%.1f"))
			line += fmt.Sprintf("  server CPU %4.0f µs/msg", median(each(rs, serverCPUPerMsg)))
			if name != BareName {
				line += fmt.Sprintf("  %s CPU %4.0f µs/msg  RSS after %5.1f MiB", ProcessLabel(name), median(each(rs, cpuPerMsg)), median(each(rs, rssMiB)))
			}
			if errs := sum(each(rs, func(r Run) float64 { return float64(r.Errors) })); errs > 0 {
				line += fmt.Sprintf("  ERRORS %.0f", errs)
			}
			fmt.Fprintln(w, strings.TrimRight(line, " "))
		}
		if http := set[BareHTTPName]; len(http) > 0 && len(set[BareName]) > 0 {
			tp := ratios(http, set[BareName], Run.PerSecond)
			fmt.Fprintf(w, "  %s / %s: throughput %.2f %s (what HTTP alone keeps)\n", BareHTTPName, BareName, median(tp), list(tp, "%.2f"))
		}
		for _, name := range consumers {
			if http := set[BareHTTPName]; len(http) > 0 && len(set[name]) > 0 {
				tp := ratios(set[name], http, Run.PerSecond)
				cpu := ratios(set[name], http, cpuPerMsg)
				fmt.Fprintf(w, "  %s / %s: throughput %.2f %s, process CPU per message %.2f %s\n", name, BareHTTPName,
					median(tp), list(tp, "%.2f"), median(cpu), list(cpu, "%.2f"))
			}
			if len(set[BareName]) == 0 || len(set[name]) == 0 {
				continue
			}
			tp := ratios(set[name], set[BareName], Run.PerSecond)
			p99 := ratios(set[name], set[BareName], q(0.99))
			goal := fmt.Sprintf("goal >= %.1f", GoalThroughput)
			p99Goal := ""
			if k.concurrency == lowest {
				p99Goal = fmt.Sprintf(" (goal <= %.0f)", GoalP99)
			}
			fmt.Fprintf(w, "  %s / bare: throughput %.2f %s (%s), p99 %.2f %s%s\n", name,
				median(tp), list(tp, "%.2f"), goal, median(p99), list(p99, "%.2f"), p99Goal)
		}
		if len(consumers) >= 2 {
			first, last := consumers[0], consumers[len(consumers)-1]
			a, b := set[last], set[first]
			if len(a) > 0 && len(b) > 0 {
				tp := ratios(a, b, Run.PerSecond)
				p99 := ratios(a, b, q(0.99))
				rss := ratios(a, b, rssMiB)
				cpu := ratios(a, b, cpuPerMsg)
				fmt.Fprintf(w, "  %s / %s: throughput %.2f %s, p99 %.2f %s, RSS after %.2f %s, CPU per message %.2f %s\n",
					last, first, median(tp), list(tp, "%.2f"), median(p99), list(p99, "%.2f"),
					median(rss), list(rss, "%.2f"), median(cpu), list(cpu, "%.2f"))
			}
		}
	}
}

// ProcessLabel names a pushed process's CPU in the lines: the consumer's,
// or the bare HTTP endpoint's own.
func ProcessLabel(name string) string {
	if name == BareHTTPName {
		return "process"
	}
	return "consumer"
}

// q returns the latency quantile in milliseconds.
func q(p float64) func(Run) float64 {
	return func(r Run) float64 { return float64(r.Quantile(p)) / float64(time.Millisecond) }
}

func rssMiB(r Run) float64 { return float64(r.RSS) / (1 << 20) }

func cpuPerMsg(r Run) float64 { return float64(r.CPU.Microseconds()) / float64(r.Messages) }

func serverCPUPerMsg(r Run) float64 { return float64(r.ServerCPU.Microseconds()) / float64(r.Messages) }

func each(rs []Run, f func(Run) float64) []float64 {
	out := make([]float64, len(rs))
	for i, r := range rs {
		out[i] = f(r)
	}
	return out
}

// ratios pairs a's and b's runs round by round (the i-th of each ran in
// the same round) and returns f(a)/f(b) for each.
func ratios(a, b []Run, f func(Run) float64) []float64 {
	n := min(len(a), len(b))
	out := make([]float64, 0, n)
	for i := range n {
		if d := f(b[i]); d != 0 {
			out = append(out, f(a[i])/d)
		}
	}
	return out
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func sum(v []float64) float64 {
	t := 0.0
	for _, x := range v {
		t += x
	}
	return t
}

func list(v []float64, format string) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf(format, x)
	}
	return "[" + strings.Join(parts, " ") + "]"
}
