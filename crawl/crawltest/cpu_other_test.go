//go:build !unix

package crawltest

import "time"

var processStart = time.Now()

// processCPU returns the time since the process started, where the CPU
// time it used is not at hand.
func processCPU() time.Duration { return time.Since(processStart) }
