package limiter

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"
)

// t0 is an arbitrary start for tests that drive time by hand.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

type step struct {
	key  string
	at   time.Duration // after t0
	want bool
}

func runSteps(t *testing.T, l *Local, steps []step) {
	t.Helper()
	for i, s := range steps {
		if got := l.allowAt(s.key, t0.Add(s.at)); got != s.want {
			t.Fatalf("step %d: Allow(%q) at +%v = %v, want %v", i, s.key, s.at, got, s.want)
		}
	}
}

func TestLocal_Allow_RateAndBurst(t *testing.T) {
	l := New(2, 3)
	runSteps(t, l, []step{
		{"a", 0, true}, {"a", 0, true}, {"a", 0, true}, // the burst
		{"a", 0, false},
		{"a", ms(499), false},
		{"a", ms(500), true}, // one token per 500ms
		{"a", ms(500), false},
		{"a", ms(1000), true},
		{"a", ms(1000), false},
		{"a", ms(10_000), true}, // refilled, but only up to the burst
		{"a", ms(10_000), true},
		{"a", ms(10_000), true},
		{"a", ms(10_000), false},
	})
	if got := l.Stats().Denials; got != 5 {
		t.Errorf("Stats().Denials = %d, want 5", got)
	}
}

func TestLocal_Allow_KeysIsolated(t *testing.T) {
	l := New(1, 1)
	runSteps(t, l, []step{
		{"a", 0, true}, {"a", 0, false},
		{"b", 0, true}, {"b", 0, false},
		{"a", ms(1000), true},
		{"c", ms(1000), true},
	})
}

func TestLocal_Allow_Unlimited(t *testing.T) {
	for _, perSecond := range []float64{0, -1, posInf()} {
		l := New(perSecond, 1)
		for i := range 100 {
			if !l.allowAt("a", t0) {
				t.Fatalf("New(%v, 1): Allow #%d = false, want true", perSecond, i)
			}
		}
		if n := l.Len(); n != 0 {
			t.Errorf("New(%v, 1): Len() = %d, want 0 (nothing to track)", perSecond, n)
		}
	}
}

func posInf() float64 { var z float64; return 1 / z }

func TestLocal_SetRate(t *testing.T) {
	t.Run("ExistingKeysFollow", func(t *testing.T) {
		l := New(1, 1)
		runSteps(t, l, []step{{"a", 0, true}, {"a", ms(100), false}})
		l.setRateAt(10, 1, t0.Add(ms(100)))
		// 0.1 token at the change, then 10/s: full again 90ms later.
		runSteps(t, l, []step{{"a", ms(189), false}, {"a", ms(191), true}, {"a", ms(191), false}})
	})
	t.Run("BurstRaisedForNewAndOldKeys", func(t *testing.T) {
		l := New(1, 1)
		runSteps(t, l, []step{{"old", 0, true}})
		l.setRateAt(1, 3, t0)
		runSteps(t, l, []step{
			{"new", 0, true}, {"new", 0, true}, {"new", 0, true}, {"new", 0, false},
			{"old", ms(3000), true}, {"old", ms(3000), true}, {"old", ms(3000), true}, {"old", ms(3000), false},
		})
	})
	t.Run("BurstLoweredCapsTokens", func(t *testing.T) {
		l := New(1, 5)
		runSteps(t, l, []step{{"a", 0, true}})
		l.setRateAt(1, 1, t0)
		runSteps(t, l, []step{{"a", 0, true}, {"a", 0, false}})
	})
	t.Run("UnlimitedAndBack", func(t *testing.T) {
		l := New(1, 1)
		runSteps(t, l, []step{{"a", 0, true}, {"a", 0, false}})
		l.setRateAt(0, 1, t0)
		runSteps(t, l, []step{{"a", 0, true}, {"a", 0, true}})
		l.setRateAt(1, 1, t0)
		runSteps(t, l, []step{{"a", 0, true}, {"a", 0, false}, {"a", ms(1000), true}})
	})
}

func TestLocal_Reserve_DelaysAndCancel(t *testing.T) {
	l := New(10, 2)
	s := l.shardFor("a")
	var got []time.Duration
	for range 4 {
		r, _ := s.reserve("a", t0)
		got = append(got, r.DelayFrom(t0))
	}
	want := []time.Duration{0, 0, ms(100), ms(200)}
	if !slices.Equal(got, want) {
		t.Fatalf("reservation delays = %v, want %v", got, want)
	}
	// Giving back the last reservation frees its slot for the next waiter.
	r, _ := s.reserve("a", t0)
	s.cancel("a", r, t0)
	if r, _ := s.reserve("a", t0); r.DelayFrom(t0) != ms(300) {
		t.Fatalf("delay after cancel = %v, want %v", r.DelayFrom(t0), ms(300))
	}
}

// TestLocal_FullTableOfBusyKeys: a new key that finds every slot busy is
// refused until the first busy key has refilled, and then takes its place.
func TestLocal_FullTableOfBusyKeys(t *testing.T) {
	l := New(1, 1, MaxEntries(2))
	runSteps(t, l, []step{{"a", 0, true}, {"b", ms(10), true}, {"c", ms(20), false}})
	if r, retryAt := l.shardFor("c").reserve("c", t0.Add(ms(20))); r != nil || retryAt.Before(t0.Add(ms(1000))) || retryAt.After(t0.Add(ms(1001))) {
		t.Fatalf("reserve(c) = %v, %v; want nil and about +1s", r, retryAt.Sub(t0))
	}
	runSteps(t, l, []step{
		{"c", ms(999), false},
		{"c", ms(1001), true},  // "a" refilled at +1s and was evicted
		{"b", ms(1001), false}, // "b" was kept: it owes time until +1.01s
		{"b", ms(1010), true},
	})
	st := l.statsAt(t0.Add(ms(1001)))
	if st.Keys != 2 || st.Evictions != 1 {
		t.Errorf("Stats() = %d keys, %d evictions; want 2, 1", st.Keys, st.Evictions)
	}
	if _, ok := st.Tokens["a"]; ok {
		t.Errorf("Stats().Tokens has the evicted key a: %v", st.Tokens)
	}
}

// checkBound fails if any shard tracks more keys than its share or its
// heap and map disagree.
func checkBound(tb testing.TB, l *Local, maxEntries int) {
	tb.Helper()
	total := 0
	for i := range l.shards {
		s := &l.shards[i]
		if len(s.m) > s.max || len(s.m) != len(s.byFull) {
			tb.Fatalf("shard %d: %d keys, %d in heap, bound %d", i, len(s.m), len(s.byFull), s.max)
		}
		total += len(s.m)
	}
	if total > maxEntries {
		tb.Fatalf("%d keys tracked, bound %d", total, maxEntries)
	}
}

func TestLocal_MemoryBound_Flood(t *testing.T) {
	const flood = 1_000_000
	t.Run("AllAtOnce", func(t *testing.T) {
		// Every key stays busy: once the table is full, new keys are
		// refused, and the table never grows.
		l := New(1, 3)
		allowed := 0
		for i := range flood {
			if l.allowAt("h"+strconv.Itoa(i)+".example", t0) {
				allowed++
			}
			if i%50_000 == 0 {
				checkBound(t, l, DefaultMaxEntries)
			}
		}
		checkBound(t, l, DefaultMaxEntries)
		if allowed != DefaultMaxEntries || l.Len() != DefaultMaxEntries {
			t.Errorf("%d allowed, Len() = %d; want %d and %d", allowed, l.Len(), DefaultMaxEntries, DefaultMaxEntries)
		}
	})
	t.Run("OverTime", func(t *testing.T) {
		// Keys refill within 10ms; 1µs apart, about 10,000 are busy at
		// once, so the table turns over and idle keys make room.
		l := New(100, 1)
		denied := 0
		for i := range flood {
			if !l.allowAt("h"+strconv.Itoa(i)+".example", t0.Add(time.Duration(i)*time.Microsecond*2)) {
				denied++
			}
			if i%50_000 == 0 {
				checkBound(t, l, DefaultMaxEntries)
			}
		}
		checkBound(t, l, DefaultMaxEntries)
		st := l.Stats()
		if denied != 0 || st.Evictions < flood-DefaultMaxEntries {
			t.Errorf("%d denied, %d evictions; want 0 and at least %d", denied, st.Evictions, flood-DefaultMaxEntries)
		}
	})
}

// TestLocal_BusyKeysNeverExceedRate drives a small table with many keys
// through heavy eviction, by Allow and by reservations, and checks every
// key's granted requests against the token bucket they must fit.
func TestLocal_BusyKeysNeverExceedRate(t *testing.T) {
	const (
		perSecond = 4.0
		burst     = 3
	)
	rng := rand.New(rand.NewPCG(1, 2))
	l := New(perSecond, burst, MaxEntries(4))
	events := map[string][]time.Time{}
	now := t0
	refused := 0
	for range 50_000 {
		now = now.Add(time.Duration(rng.IntN(int(ms(150)))))
		key := fmt.Sprintf("k%d", rng.IntN(10))
		if rng.IntN(4) == 0 {
			r, _ := l.shardFor(key).reserve(key, now)
			if r == nil {
				refused++
				continue
			}
			events[key] = append(events[key], now.Add(r.DelayFrom(now)))
		} else if l.allowAt(key, now) {
			events[key] = append(events[key], now)
		} else {
			refused++
		}
		checkBound(t, l, 4)
	}
	if ev := l.Stats().Evictions; ev < 1000 || refused == 0 {
		t.Fatalf("%d evictions, %d refused: the test did not exercise eviction", ev, refused)
	}
	// A sequence fits a bucket of this rate and burst if and only if no
	// request comes before its theoretical arrival time (GCRA) less the
	// burst allowance.
	interval := time.Duration(float64(time.Second) / perSecond)
	const slack = time.Microsecond // float rounding in x/time/rate
	for key, ts := range events {
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
		var tat time.Time
		for i, at := range ts {
			if earliest := tat.Add(-burst*interval + interval - slack); at.Before(earliest) {
				t.Fatalf("key %s: request %d at +%v, %v before its bucket allowed it", key, i, at.Sub(t0), earliest.Sub(at))
			}
			if at.After(tat) {
				tat = at
			}
			tat = tat.Add(interval)
		}
	}
}
