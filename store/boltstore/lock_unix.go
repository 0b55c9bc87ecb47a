//go:build unix

package boltstore

import (
	"errors"
	"os"
	"syscall"
	"time"

	"go.etcd.io/bbolt"
)

// lockShared takes a shared lock on f, the kind bbolt's read-only opens
// take, waiting up to timeout (bbolt.ErrTimeout) while another process
// holds the file for writing. Closing f releases it.
func lockShared(f *os.File, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return err
		}
		if time.Now().After(deadline) {
			return bbolt.ErrTimeout
		}
		time.Sleep(50 * time.Millisecond)
	}
}
