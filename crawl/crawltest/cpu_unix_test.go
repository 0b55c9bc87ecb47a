//go:build unix

package crawltest

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time this process has used, user and system:
// unlike the wall clock, it does not grow while other processes have the
// machine's cores.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
