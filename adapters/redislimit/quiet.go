package redislimit

import "context"

// QuietLogger discards go-redis's own log lines. While Redis is down
// go-redis prints "failed to dial" on every command, which would drown the
// limiter's own report (logged once per interval, see ratelimit.Config).
// A program installs it once, at start: redis.SetLogger(redislimit.QuietLogger{}).
// The library does not do it itself because the logger is process-wide.
type QuietLogger struct{}

// Printf implements go-redis's internal.Logging.
func (QuietLogger) Printf(context.Context, string, ...any) {}
