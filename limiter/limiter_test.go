package limiter_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder/limiter"
)

// TestLocal_Wait_Immediate: Waits within the burst do not sleep (Waits
// counts those that do; a time bound would measure the machine's load).
func TestLocal_Wait_Immediate(t *testing.T) {
	l := limiter.New(1, 2)
	defer l.Close()
	for i := range 2 {
		if err := l.Wait(context.Background(), "a"); err != nil {
			t.Fatalf("Wait #%d = %v, want nil", i, err)
		}
		if st := l.Stats(); st.Waits != 0 {
			t.Errorf("Stats().Waits = %d after Wait #%d within the burst, want 0", st.Waits, i)
		}
	}
}

func TestLocal_Wait_Sleeps(t *testing.T) {
	// One every 150ms: a caller held up between two Waits for as long (a
	// loaded machine running -race) would find the next token come and
	// not sleep, so the interval is well above such delays.
	l := limiter.New(1/0.15, 1)
	defer l.Close()
	start := time.Now()
	for i := range 4 {
		if err := l.Wait(context.Background(), "a"); err != nil {
			t.Fatalf("Wait #%d = %v, want nil", i, err)
		}
	}
	if d := time.Since(start); d < 440*time.Millisecond {
		t.Errorf("4 Waits at one every 150ms, burst 1, took %v, want at least 450ms", d)
	}
	if st := l.Stats(); st.Waits != 3 {
		t.Errorf("Stats().Waits = %d, want 3", st.Waits)
	}
}

func TestLocal_Wait_Cancel(t *testing.T) {
	l := limiter.New(0.001, 1) // the second token comes in 1000s
	defer l.Close()
	if err := l.Wait(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	start := time.Now()
	err := l.Wait(ctx, "a")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait after cancel = %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Wait returned %v after cancel, want promptly", d)
	}
	// The cancelled wait gave its reservation back.
	if tok := l.Stats().Tokens["a"]; tok < -0.01 {
		t.Errorf("Stats().Tokens[a] = %v after cancel, want about 0", tok)
	}
}

func TestLocal_Wait_DeadlineTooSoon(t *testing.T) {
	l := limiter.New(0.001, 1)
	defer l.Close()
	_ = l.Allow("a")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	err := l.Wait(ctx, "a")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait = %v, want an error wrapping context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Wait took %v, want an immediate answer", d)
	}
}

func TestLocal_Wait_NewKeyWaitsForSlot(t *testing.T) {
	// "a" is busy for 250ms: long enough that a loaded machine running
	// -race does not let it go idle between the two Allows.
	l := limiter.New(4, 1, limiter.MaxEntries(1))
	defer l.Close()
	// Timed from before "a" takes its token: the time between that and
	// Wait("b"), however long on a loaded machine, counts towards the
	// 250ms, so only a Wait that did not wait for the slot ends sooner.
	start := time.Now()
	if !l.Allow("a") {
		t.Fatal(`Allow("a") = false, want true`)
	}
	if l.Allow("b") {
		t.Fatal(`Allow("b") = true with the only slot busy, want false`)
	}
	if err := l.Wait(context.Background(), "b"); err != nil {
		t.Fatalf(`Wait("b") = %v`, err)
	}
	if d := time.Since(start); d < 245*time.Millisecond {
		t.Errorf(`Wait("b") ended %v after Allow("a"), want 250ms or more`, d)
	}
	if st := l.Stats(); st.Keys != 1 || st.Evictions != 1 {
		t.Errorf("Stats() = %d keys, %d evictions; want 1, 1", st.Keys, st.Evictions)
	}
}

func TestLocal_Close(t *testing.T) {
	before := runtime.NumGoroutine()
	l := limiter.New(0.001, 1)
	_ = l.Allow("a")
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for range 10 {
		wg.Go(func() { errs <- l.Wait(context.Background(), "a") })
	}
	// Let the waiters block: Stats counts them once they sleep.
	for deadline := time.Now().Add(5 * time.Second); l.Stats().Waits < 10; {
		if time.Now().After(deadline) {
			t.Fatalf("waiters did not start: %+v", l.Stats())
		}
		time.Sleep(time.Millisecond)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, limiter.ErrClosed) {
			t.Errorf("Wait during Close = %v, want ErrClosed", err)
		}
	}
	if err := l.Wait(context.Background(), "b"); !errors.Is(err, limiter.ErrClosed) {
		t.Errorf("Wait after Close = %v, want ErrClosed", err)
	}
	if l.Allow("b") {
		t.Error(`Allow("b") after Close = true, want false`)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close() = %v", err)
	}
	// The waiters' goroutines end just after wg.Done: give them a moment.
	after := runtime.NumGoroutine()
	for deadline := time.Now().Add(2 * time.Second); after > before && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
		after = runtime.NumGoroutine()
	}
	if after > before {
		t.Errorf("%d goroutines before New, %d after Close", before, after)
	}
}

func TestLocal_Stats(t *testing.T) {
	l := limiter.New(1, 2)
	defer l.Close()
	l.Allow("a")
	l.Allow("b")
	l.Allow("b")
	l.Allow("b")
	st := l.Stats()
	if st.Keys != 2 || st.Denials != 1 {
		t.Errorf("Stats() = %d keys, %d denials; want 2, 1", st.Keys, st.Denials)
	}
	if a, b := st.Tokens["a"], st.Tokens["b"]; a < 1 || a > 1.1 || b < 0 || b > 0.1 {
		t.Errorf("Stats().Tokens = %v, want a≈1, b≈0", st.Tokens)
	}
}

// TestLocal_Concurrent hammers one Local from many goroutines (run with
// -race) and checks that a key never gets more than its burst at once.
func TestLocal_Concurrent(t *testing.T) {
	l := limiter.New(0.001, 5, limiter.MaxEntries(300))
	defer l.Close()
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Go(func() {
			for i := range 2000 {
				key := fmt.Sprintf("k%d", (g*7+i)%100)
				if l.Allow(key) {
					mu.Lock()
					got[key]++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	for key, n := range got {
		if n > 5 {
			t.Errorf("key %s allowed %d times at 0.001/s, burst 5", key, n)
		}
	}
	if len(got) != 100 {
		t.Errorf("%d keys allowed, want 100", len(got))
	}
}

func ExampleLocal() {
	l := limiter.New(1, 3) // 1 request/s per host, bursts of 3
	defer l.Close()
	for range 4 {
		fmt.Println(l.Allow("example.com"))
	}
	fmt.Println(l.Allow("example.org"))
	// Output:
	// true
	// true
	// true
	// false
	// true
}

// BenchmarkLocal_Allow measures Allow from 256 goroutines over 10,000 keys.
func BenchmarkLocal_Allow(b *testing.B) {
	l := limiter.New(1, 3)
	defer l.Close()
	keys := make([]string, 10_000)
	for i := range keys {
		keys[i] = fmt.Sprintf("host%d.example.com", i)
	}
	b.SetParallelism((256 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := rand.IntN(len(keys))
		for pb.Next() {
			l.Allow(keys[i])
			if i++; i == len(keys) {
				i = 0
			}
		}
	})
}

func TestSleep(t *testing.T) {
	if err := limiter.Sleep(t.Context(), nil, "a", time.Millisecond); err != nil {
		t.Errorf("Sleep(1ms) = %v, want nil", err)
	}
	short, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := limiter.Sleep(short, nil, "a.example", time.Hour)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), `"a.example"`) || time.Since(start) > 40*time.Millisecond {
		t.Errorf("Sleep(1h) under a 50ms deadline = %v after %v; want at once an error naming the key and wrapping DeadlineExceeded", err, time.Since(start))
	}
	ended, end := context.WithCancel(t.Context())
	end()
	if err := limiter.Sleep(ended, nil, "a", time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep on a cancelled ctx = %v, want context.Canceled", err)
	}
	done := make(chan struct{})
	close(done)
	if err := limiter.Sleep(t.Context(), done, "a", time.Hour); !errors.Is(err, limiter.ErrClosed) {
		t.Errorf("Sleep with done closed = %v, want ErrClosed", err)
	}
}
