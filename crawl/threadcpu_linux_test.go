package crawl_test

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU returns the user and system CPU time the calling thread used
// so far.
func threadCPU(tb testing.TB) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		tb.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
