package clocktest_test

import (
	"sync"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder/internal/clocktest"
)

func TestClock_MovesOnlyByAdd(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	c := clocktest.New(start)
	if got := c.Now(); !got.Equal(start) {
		t.Fatalf("Now() = %v, want %v", got, start)
	}
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.Add(time.Second)
		}()
	}
	wg.Wait()
	if got, want := c.Now(), start.Add(10*time.Second); !got.Equal(want) {
		t.Fatalf("after 10 Adds of 1s: Now() = %v, want %v", got, want)
	}
}
