package devpipe

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTable prints the account of a finished run, one line per pipeline
// subscription: published, applied, duplicate, stale, dead-lettered,
// retried, and lost (published messages that never reached a final state).
func WriteTable(w io.Writer, rows []Row) error { return writeTable(w, rows, false) }

// WriteLiveTable prints the account of a running pipeline (dev --serve's
// /stats): its last columns are in-dlq, what each dead-letter subscription
// holds now (a replay takes messages out; dead-lettered counts them all), and
// pending, not lost, because a message waiting for a retry or a delivery has
// no final state yet and may still get one.
func WriteLiveTable(w io.Writer, rows []Row) error { return writeTable(w, rows, true) }

func writeTable(w io.Writer, rows []Row, live bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := "pipeline\tsubscription\tpublished\tapplied\tduplicate\tstale\tdead-lettered\tpoison-acked\tretried\t"
	if live {
		header += "in-dlq\tpending\t"
	} else {
		header += "lost\t"
	}
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		lost := fmt.Sprint(len(r.Pending))
		if r.Filtered {
			lost = "(filtered)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t", r.Pipeline, r.Subscription, r.Published, r.Applied,
			r.Duplicate, r.Stale, r.DeadLettered, r.PoisonAcked, r.Retried)
		if live {
			fmt.Fprintf(tw, "%d\t", r.InDLQ)
		}
		fmt.Fprintf(tw, "%s\t\n", lost)
	}
	return tw.Flush()
}

// Check verifies that nothing was lost: on every subscription, every
// published message reached a final state and published = applied +
// duplicate + stale + dead-lettered (+ poison acked where there is no DLQ).
// The error names each subscription and up to five lost message ids.
func Check(rows []Row) error {
	var errs []error
	for _, r := range rows {
		if r.Filtered {
			continue
		}
		sum := r.Applied + r.Duplicate + r.Stale + r.DeadLettered + r.PoisonAcked
		if len(r.Pending) > 0 {
			ids := r.Pending
			if len(ids) > 5 {
				ids = append(ids[:5:5], "…")
			}
			errs = append(errs, fmt.Errorf("%s/%s: %d of %d published messages never reached a final state (lost): %s",
				r.Pipeline, r.Subscription, len(r.Pending), r.Published, strings.Join(ids, ", ")))
		}
		if sum != r.Published {
			errs = append(errs, fmt.Errorf("%s/%s: published %d != applied %d + duplicate %d + stale %d + dead-lettered %d + poison-acked %d = %d",
				r.Pipeline, r.Subscription, r.Published, r.Applied, r.Duplicate, r.Stale, r.DeadLettered, r.PoisonAcked, sum))
		}
	}
	return errors.Join(errs...)
}
