package daemon

import (
	"context"
	"time"
)

// RunJanitor closes expired sessions every Config.JanitorInterval until
// ctx ends. A server runs it beside its listeners.
func (d *Daemon) RunJanitor(ctx context.Context) {
	t := time.NewTicker(d.cfg.JanitorInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if n := d.expire(now); n > 0 {
				d.log.Info("closed expired sessions", "count", n)
			}
		}
	}
}
