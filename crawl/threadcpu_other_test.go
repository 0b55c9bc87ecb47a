//go:build !linux

package crawl_test

import "time"

// threadCPU returns 0: without a thread's own CPU time, the sampler's CPU
// is counted with the crawler's.
func threadCPU() (time.Duration, error) { return 0, nil }
