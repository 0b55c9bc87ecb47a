// Package concurrencytest starves a test process of CPU on purpose, for
// the tests of the concurrency limit and of the run loop under load.
package concurrencytest

import "sync"

// Burn keeps n goroutines spinning until stop closes, each preempted only
// by the scheduler: runnable goroutines that queue for the process's CPUs
// beside its other work, as a starved probe's DNS answers and handshakes
// do. Wait on the returned group after closing stop.
func Burn(n int, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			x := 0
			for {
				select {
				case <-stop:
					return
				default:
				}
				for i := range 100_000 {
					x += i
				}
			}
		})
	}
	return &wg
}
