package components_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/components"
	"github.com/eventpipe/eventpipe/consumer/server"
)

// TestConsumerEnvStartsTheConsumer hands the environment the Consumer
// component gives the service to the consumer's own configuration reader
// (server.ConfigFromEnv, what cmd/consumer runs at start): for push-only,
// pull-only and mixed pipelines, and with callers allowed to call back, it
// is accepted, and it says what the stack config says.
func TestConsumerEnvStartsTheConsumer(t *testing.T) {
	const head = stackHead + "        minInstances: 1\n"
	cases := []struct {
		name, consumer, subscriptions string
		check                         func(t *testing.T, c server.Config)
	}{
		{
			name:          "push only",
			subscriptions: "        main:\n          delivery: push\n",
			check: func(t *testing.T, c server.Config) {
				if c.Audience != "acme-dev/orders/pubsub-push" || !slices.Equal(c.PushAccounts, []string{pushEmail}) {
					t.Errorf("push audience %q accounts %v", c.Audience, c.PushAccounts)
				}
				if len(c.CallbackAccounts) != 0 {
					t.Errorf("callback accounts %v, want none", c.CallbackAccounts)
				}
			},
		},
		{
			name:          "pull only",
			subscriptions: "        work:\n          delivery: pull\n",
			check: func(t *testing.T, c server.Config) {
				if !slices.Equal(c.PullSubscriptions, []string{"projects/acme-dev/subscriptions/orders-work"}) {
					t.Errorf("pull subscriptions %v", c.PullSubscriptions)
				}
				if c.Audience != "" || len(c.PushAccounts) != 0 {
					t.Errorf("a pull-only consumer verifies push tokens: audience %q accounts %v", c.Audience, c.PushAccounts)
				}
			},
		},
		{
			name:          "push and pull",
			subscriptions: "        main:\n          delivery: push\n        work:\n          delivery: pull\n",
			check: func(t *testing.T, c server.Config) {
				if len(c.PushAccounts) != 1 || len(c.PullSubscriptions) != 1 {
					t.Errorf("push accounts %v pull subscriptions %v", c.PushAccounts, c.PullSubscriptions)
				}
			},
		},
		{
			name:          "callbacks with the push audience",
			consumer:      "        callbackAccounts: [billing-jobs@acme-dev.iam.gserviceaccount.com, sync@acme-ops.iam.gserviceaccount.com]\n",
			subscriptions: "        main:\n          delivery: push\n",
			check: func(t *testing.T, c server.Config) {
				want := []string{"billing-jobs@acme-dev.iam.gserviceaccount.com", "sync@acme-ops.iam.gserviceaccount.com"}
				if !slices.Equal(c.CallbackAccounts, want) || c.CallbackAudience != "acme-dev/orders/pubsub-push" {
					t.Errorf("callback accounts %v audience %q, want %v and the push audience", c.CallbackAccounts, c.CallbackAudience, want)
				}
			},
		},
		{
			name:          "callbacks with their own audience on a pull-only pipeline",
			consumer:      "        callbackAccounts: [billing-jobs@acme-dev.iam.gserviceaccount.com]\n        callbackAudience: https://orders.example/callback\n",
			subscriptions: "        work:\n          delivery: pull\n",
			check: func(t *testing.T, c server.Config) {
				if c.CallbackAudience != "https://orders.example/callback" || len(c.CallbackAccounts) != 1 {
					t.Errorf("callback accounts %v audience %q", c.CallbackAccounts, c.CallbackAudience)
				}
				if c.Audience != "" {
					t.Errorf("push audience %q on a pull-only pipeline", c.Audience)
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc := head + c.consumer + "      subscriptions:\n" + c.subscriptions
			service := one(t, declareStack(t, doc), tService, "orders")
			vars := env(t, service)
			cfg, err := server.ConfigFromEnv(func(k string) (string, bool) {
				v, ok := vars[k]
				return v, ok
			})
			if err != nil {
				t.Fatalf("the consumer refuses the environment the component gives it:\n%v\nenv: %v", err, vars)
			}
			if strings.Join(cfg.PullSubscriptions, ",") != vars["EVENTPIPE_PULL_SUBSCRIPTIONS"] {
				t.Errorf("pull subscriptions %v from %q", cfg.PullSubscriptions, vars["EVENTPIPE_PULL_SUBSCRIPTIONS"])
			}
			// The consumer bounds its reads and its store's waits by the service's own
			// request timeout, not a default of its own.
			tmpl, _ := input(service, "template").(map[string]any)
			if timeout, err := time.ParseDuration(fmt.Sprint(tmpl["timeout"])); err != nil || cfg.RequestTimeout != timeout {
				t.Errorf("consumer request timeout %v, the service's %v (%v)", cfg.RequestTimeout, tmpl["timeout"], err)
			}
			c.check(t, cfg)
		})
	}
}

// TestConsumerCallbackCallersMayInvoke: each callback account gets
// roles/run.invoker on the service (there is no public invoker), and a
// callback audience of its own is one Cloud Run accepts tokens for.
func TestConsumerCallbackCallersMayInvoke(t *testing.T) {
	plan := declareStack(t, stackHead+`        callbackAccounts: [billing-jobs@acme-dev.iam.gserviceaccount.com]
        callbackAudience: https://orders.example/callback
      subscriptions:
        main:
          delivery: push
`)
	grant := one(t, plan, tServiceIAM, "orders-callback-invoker-billing-jobs@acme-dev.iam.gserviceaccount.com")
	if input(grant, "role") != components.RoleRunInvoker || input(grant, "member") != "serviceAccount:billing-jobs@acme-dev.iam.gserviceaccount.com" ||
		input(grant, "name") != "orders-consumer" {
		t.Errorf("callback grant inputs = %v", grant.Inputs)
	}
	audiences := input(one(t, plan, tService, "orders"), "customAudiences")
	if want := []any{"acme-dev/orders/pubsub-push", "https://orders.example/callback"}; !equalJSON(audiences, want) {
		t.Errorf("custom audiences = %v, want %v", audiences, want)
	}
}
