package boltstore

import (
	"log/slog"

	"github.com/spyder-crawler/spyder/limiter"
	"github.com/spyder-crawler/spyder/store"
)

var _ store.Backend = (*Store)(nil)

// Limiters returns local: the file is locked by one process, which is the
// whole crawl. It implements [store.Backend].
func (s *Store) Limiters(local *limiter.Local, _ float64, _ int, _ *slog.Logger) limiter.Limiter {
	return local
}

// Shared reports false: bbolt's lock keeps every other process off the
// file, so a lease found in it at start was left by an earlier run. It
// implements [store.Backend].
func (s *Store) Shared() bool { return false }

// Name returns the file's path. It implements [store.Backend].
func (s *Store) Name() string { return s.path }
