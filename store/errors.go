package store

import "errors"

// ErrWritesRefused is matched (with errors.Is) by an error of storage that
// takes no write until someone acts: a disk full, over quota, read-only or
// failing; a bbolt file that stopped at its last commit; a Redis over
// maxmemory, unable to persist or a read-only replica. Every write of every
// host fails alike then, so a crawl stops and says why instead of failing
// host after host to dead.
var ErrWritesRefused = errors.New("writes refused")

// WritesRefused returns err marked as [ErrWritesRefused]: its message is
// err's own, and errors.Is and errors.As still see err and its chain.
func WritesRefused(err error) error {
	if err == nil {
		return nil
	}
	return refused{err}
}

type refused struct{ error }

func (e refused) Unwrap() error        { return e.error }
func (e refused) Is(target error) bool { return target == ErrWritesRefused }
