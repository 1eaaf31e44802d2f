package testenv

import (
	"context"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// CommandCounter is a go-redis hook that counts the commands a client
// sends (its round trips, for a client that does not pipeline), less those
// refused with NOSCRIPT: the shared server's script cache may be flushed by
// another test, and reloading the script then costs one more. Install it
// with client.AddHook.
type CommandCounter struct{ n atomic.Int64 }

// Count returns the commands counted so far.
func (c *CommandCounter) Count() int64 { return c.n.Load() }

// DialHook implements redis.Hook.
func (c *CommandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook implements redis.Hook.
func (c *CommandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err == nil || !strings.HasPrefix(err.Error(), "NOSCRIPT") {
			c.n.Add(1)
		}
		return err
	}
}

// ProcessPipelineHook implements redis.Hook.
func (c *CommandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}
