package limiter

import (
	"context"
	"fmt"
	"time"
)

// Sleep waits d for key's turn, as a limiter's Wait does once it knows how
// long: it returns nil when d has passed; ctx's error when ctx ends first;
// [ErrClosed] when done (the limiter's closing) is closed first; and at
// once an error wrapping context.DeadlineExceeded, naming key, when ctx's
// deadline comes before d would pass, so a caller that cannot make it
// neither waits nor holds its turn.
func Sleep(ctx context.Context, done <-chan struct{}, key string, d time.Duration) error {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		return fmt.Errorf("limiter: %q needs %v, beyond the deadline: %w", key, d, context.DeadlineExceeded)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-done:
		return ErrClosed
	}
}
