package store

import (
	"context"
	"time"
)

// ProbeBeat is what one probe of a crawl last said about itself in a
// heartbeat: how fast it works and how much it holds. The dashboard and
// `spyder queue stats` list the beats of the probes still alive.
type ProbeBeat struct {
	ID       string    `json:"id"`       // the probe's --probe
	Rate     float64   `json:"rate"`     // hosts/s over the last minute
	Done     int64     `json:"done"`     // hosts it acknowledged since it started
	Inflight int       `json:"inflight"` // hosts it is probing now
	At       time.Time `json:"at"`       // when it sent the beat
	// What the probe keeps in its own file (--state-dir) because Redis or
	// the ingest endpoint has not taken it yet: output batches, and writes
	// to the queue (discovered hosts, acks).
	Spooled int `json:"spooled,omitempty"`
	Held    int `json:"held,omitempty"`
}

// Probes is where the probes of a crawl report heartbeats. A probe that
// stops beating (it exited or died) fades from the list once the TTL of its
// last beat has passed, without anyone removing it.
type Probes interface {
	// Heartbeat records b as b.ID's latest beat, alive for ttl.
	Heartbeat(ctx context.Context, b ProbeBeat, ttl time.Duration) error

	// Probes returns the latest beat of every probe whose last beat is
	// alive, sorted by ID.
	Probes(ctx context.Context) ([]ProbeBeat, error)
}
