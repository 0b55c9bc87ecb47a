package crawl_test

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU returns the user and system CPU time the calling thread used
// so far.
func threadCPU() (time.Duration, error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
