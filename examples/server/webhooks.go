package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/petstorekit/petstore/customdomain"
	"github.com/petstorekit/petstore/webhook"
)

// webhookFlags declares the flags of webhooks; the returned function
// stores them in cfg after parsing.
func webhookFlags(fs *flag.FlagSet, env func(name, def string) string) func(cfg *config) error {
	// A boolean flag, so that -webhook-allow-private alone sets it; the
	// variable holds true or false.
	fromEnv, envErr := strconv.ParseBool(env("PETSTORE_WEBHOOK_ALLOW_PRIVATE", "false"))
	allowPrivate := fs.Bool("webhook-allow-private", fromEnv, "let webhook endpoints be on loopback, private, link-local or other non-public addresses; for tests and private networks only: it lets any project make the server send requests into its own network (PETSTORE_WEBHOOK_ALLOW_PRIVATE)")
	return func(cfg *config) error {
		if envErr != nil && !flagSet(fs, "webhook-allow-private") {
			return fmt.Errorf("PETSTORE_WEBHOOK_ALLOW_PRIVATE: want true or false, got %q", env("PETSTORE_WEBHOOK_ALLOW_PRIVATE", ""))
		}
		cfg.webhookAllowPrivate = *allowPrivate
		return nil
	}
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// startWebhooks returns the webhook service over store and delivers its
// outbox in the background until ctx is done. Every process runs a
// worker: the store's leases share the deliveries out.
func startWebhooks(ctx context.Context, cfg config, store webhook.Store, logger *slog.Logger) (*webhook.Service, error) {
	hooks, err := webhook.New(webhook.Config{Store: store, AllowPrivate: cfg.webhookAllowPrivate, Logger: logger})
	if err != nil {
		return nil, err
	}
	go func() {
		if err := hooks.Run(ctx); err != nil {
			logger.Error("webhook deliveries stopped", "err", err)
		}
	}()
	return hooks, nil
}

// domainEvents hands the custom-domain engine's lifecycle events to the
// webhook outbox, by the event's id: the engine hands an event over again
// (from any process's background loop) until this returns nil, and the
// outbox stores each id once. The event is queued even when the request
// that caused it ends right after the change was stored, so none waits
// for the background loop because a client hung up. Queuing keeps the
// request's deadline, or waits at most timeout (-db-timeout) without one,
// so a paused database does not hold the request that caused it past its
// bound: the event then waits in the domain's entry, stored with the
// change.
type domainEvents struct {
	hooks   *webhook.Service
	timeout time.Duration
}

// DomainEvent implements customdomain.Events.
func (e domainEvents) DomainEvent(ctx context.Context, projectID string, ev customdomain.PendingEvent) error {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(e.timeout)
	}
	ctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
	defer cancel()
	return e.hooks.EnqueueOnce(ctx, projectID, ev.ID, ev.Type, ev.CreatedAt, ev.Domain)
}
