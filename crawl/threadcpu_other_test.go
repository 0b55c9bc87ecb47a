//go:build !linux

package crawl_test

import (
	"testing"
	"time"
)

// threadCPU returns 0: without a thread's own CPU time, the sampler's CPU
// is counted with the crawler's.
func threadCPU(testing.TB) time.Duration { return 0 }
