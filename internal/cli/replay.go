package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"github.com/spf13/cobra"

	"github.com/eventpipe/eventpipe/replay"
)

// replayFlags are the flags of `eventpipe replay`.
type replayFlags struct {
	project string
	match   []string
	opts    replay.Options
}

// NewReplayCmd builds `eventpipe replay`: DLQ messages back to their topic.
func NewReplayCmd() *cobra.Command {
	var f replayFlags
	cmd := &cobra.Command{
		Use:   "replay --subscription DLQ_SUBSCRIPTION --topic SOURCE_TOPIC",
		Short: "Move messages from a dead-letter subscription back to their source topic",
		Long: "replay pulls the dead-letter subscription and republishes each message to the source topic with\n" +
			"its data, ordering key and attributes, plus replay metadata (eventpipe_replay_original_message_id,\n" +
			"eventpipe_replay_original_publish_time, eventpipe_replay_dlq_subscription, eventpipe_replay_delivery_attempt,\n" +
			"eventpipe_replay_time). A DLQ message is acked only after its republish succeeded, so a crash mid-replay\n" +
			"loses nothing (at worst a message is republished twice, which the idempotent consumer absorbs).\n\n" +
			"Credentials: Application Default Credentials (gcloud auth application-default login, or\n" +
			"GOOGLE_APPLICATION_CREDENTIALS); with PUBSUB_EMULATOR_HOST set it talks to that emulator instead\n" +
			"(eventpipe dev --serve prints the value). Names may be full (projects/P/subscriptions/S) or short with\n" +
			"--project (default $GOOGLE_CLOUD_PROJECT). Exit status: 0 done, 1 some republishes failed (those\n" +
			"messages stay in the DLQ), 2 bad flags or no connection.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runReplay(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.opts.Subscription, "subscription", "", "dead-letter subscription to drain (required)")
	fl.StringVar(&f.opts.Topic, "topic", "", "source topic to republish to (required)")
	fl.StringVar(&f.project, "project", os.Getenv("GOOGLE_CLOUD_PROJECT"), "project of short names (default $GOOGLE_CLOUD_PROJECT)")
	fl.StringArrayVar(&f.match, "match", nil, "replay only messages with attribute KEY=VALUE (repeatable; all must match)")
	fl.IntVar(&f.opts.Max, "max", 0, "replay at most this many messages (0: all)")
	fl.BoolVar(&f.opts.DryRun, "dry-run", false, "report what would be replayed; publish and ack nothing")
	fl.Float64Var(&f.opts.Rate, "rate", 0, "republish at most this many messages per second (0: no limit)")
	fl.IntVar(&f.opts.BatchSize, "batch-size", 0, "messages per pull, 1–1000 (0: 100)")
	_ = cmd.MarkFlagRequired("subscription")
	_ = cmd.MarkFlagRequired("topic")
	return cmd
}

func runReplay(ctx context.Context, stdout, stderr io.Writer, f replayFlags) error {
	opts := f.opts
	var err error
	if opts.Subscription, err = qualify(opts.Subscription, "subscriptions", "--subscription", f.project); err != nil {
		return &ExitError{Code: 2, Err: err}
	}
	if opts.Topic, err = qualify(opts.Topic, "topics", "--topic", f.project); err != nil {
		return &ExitError{Code: 2, Err: err}
	}
	if len(f.match) > 0 {
		opts.Match = map[string]string{}
		for _, m := range f.match {
			k, v, ok := strings.Cut(m, "=")
			if !ok || k == "" {
				return &ExitError{Code: 2, Err: fmt.Errorf("--match %q: use KEY=VALUE, e.g. --match event_type=order_created", m)}
			}
			opts.Match[k] = v
		}
	}
	if err := opts.Validate(); err != nil {
		return &ExitError{Code: 2, Err: err}
	}
	opts.Logger = slog.New(slog.NewJSONHandler(stderr, nil))
	project := strings.Split(opts.Subscription, "/")[1]
	if err := CheckReachable(ctx, PubsubEndpoints(false), ReachTimeout); err != nil {
		return &ExitError{Code: 2, Err: err}
	}
	// NewClient reads PUBSUB_EMULATOR_HOST itself; otherwise it uses ADC.
	client, err := pubsub.NewClient(ctx, project)
	if err != nil {
		return &ExitError{Code: 2, Err: fmt.Errorf("connect to Pub/Sub for project %s (credentials: ADC or PUBSUB_EMULATOR_HOST): %w", project, err)}
	}
	defer client.Close()
	started := time.Now()
	res, err := replay.Run(ctx, client, opts)
	verb := "replayed"
	if opts.DryRun {
		verb = "would replay"
	}
	if err == nil || res.Pulled > 0 { // a run that failed before pulling anything has no result to print
		fmt.Fprintf(stdout, "%s %d of %d messages from %s to %s (%d skipped by --match, %d failed) in %s\n",
			verb, res.Replayed, res.Pulled, opts.Subscription, opts.Topic, res.Skipped, res.Failed, time.Since(started).Round(time.Millisecond))
	}
	if err != nil {
		return &ExitError{Code: 2, Err: err}
	}
	if res.Failed > 0 {
		return &ExitError{Code: 1, Err: fmt.Errorf("%d messages could not be republished; they stay in %s", res.Failed, opts.Subscription)}
	}
	return nil
}

// qualify turns a short name into projects/PROJECT/KIND/NAME.
func qualify(name, kind, flag, project string) (string, error) {
	if strings.HasPrefix(name, "projects/") || name == "" {
		return name, nil
	}
	if strings.Contains(name, "/") {
		return "", fmt.Errorf("%s %q: use a full name projects/PROJECT/%s/NAME or a short NAME with --project", flag, name, kind)
	}
	if project == "" {
		return "", fmt.Errorf("%s %q is a short name: pass --project (or set GOOGLE_CLOUD_PROJECT), or use projects/PROJECT/%s/%s", flag, name, kind, name)
	}
	return "projects/" + project + "/" + kind + "/" + name, nil
}
