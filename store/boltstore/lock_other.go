//go:build !unix

package boltstore

import (
	"os"
	"time"
)

// lockShared does nothing where flock(2) does not exist: there bbolt's own
// lock, taken when the file is opened, is the only guard.
func lockShared(*os.File, time.Duration) error { return nil }
