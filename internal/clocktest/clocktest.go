// Package clocktest holds a clock that tests move by hand, for the
// components that take their time from a Now function: leases, heartbeats,
// resolver backoff. A test then decides when time passes, instead of
// sleeping and hoping a loaded machine keeps up.
package clocktest

import (
	"sync"
	"time"
)

// Clock stands still until Add moves it. It is safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	at time.Time
}

// New returns a clock that reads at. Give it a time without a monotonic
// reading (time.Now().Round(0)) when the code under test compares its
// readings with the wall clock.
func New(at time.Time) *Clock { return &Clock{at: at} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at
}

// Add moves the clock forward by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at = c.at.Add(d)
}
