package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/spyder-crawler/spyder/queue"
)

// errHeld ends a Dump once it has passed the processing records, the only
// ones Recover needs (Dump stops at its callback's first error).
var errHeld = errors.New("processing records read")

// Recover hands back the leases an earlier run left in a queue no other
// process can hold (a bbolt file, which its lock keeps to one process):
// Ctrl-C twice, a crash. Waiting for them to expire would only delay the
// resumed crawl. It must not be called on a shared queue, where those
// leases may be alive.
func Recover(ctx context.Context, q queue.Queue, log *slog.Logger) error {
	st, err := q.Stats(ctx)
	if err != nil || st.Processing == 0 {
		return err
	}
	var ls []queue.Lease
	err = q.Dump(ctx, func(r queue.Record) error {
		switch r.Kind {
		case queue.KindProcessing:
			if r.Item != nil {
				ls = append(ls, queue.Lease{Item: *r.Item, ID: r.LeaseID, Deadline: r.Deadline})
			}
		case queue.KindDead, queue.KindSeen:
			return errHeld
		}
		return nil
	})
	if err != nil && !errors.Is(err, errHeld) {
		return fmt.Errorf("recover leases: %w", err)
	}
	n, err := q.Release(ctx, ls)
	if err != nil {
		return fmt.Errorf("recover leases: %w", err)
	}
	log.Info("lease_recovered", "count", n, "hosts", hostList(ls), "note", "left in flight by an earlier run; probed again")
	return nil
}
