package limiter

import (
	"container/heap"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// shard is one independently locked part of a Local's key table. Methods
// suffixed Locked need mu held.
type shard struct {
	mu        sync.Mutex
	limit     rate.Limit // rate.Inf: no limit, and no keys tracked
	burst     int
	max       int
	m         map[string]*entry
	byFull    fullHeap // the entries, soonest full first
	evictions *atomic.Uint64
	_         [64]byte // keep neighbouring shards' locks off one cache line
}

// entry is one key's bucket. fullAt is when the bucket is full again if left
// alone: from then on the key is idle and may be forgotten.
type entry struct {
	key    string
	lim    *rate.Limiter
	fullAt time.Time
	index  int // in byFull
}

func (s *shard) allow(key string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.limit == rate.Inf {
		return true
	}
	e, _ := s.getLocked(key, now)
	if e == nil || !e.lim.AllowN(now, 1) {
		return false
	}
	s.refreshLocked(e, now)
	return true
}

// reserve takes a token for key, possibly in the future, and returns the
// reservation. When key is new and no slot can be freed, it returns nil and
// the time a slot frees up; when nothing is limited, nil and the zero time.
func (s *shard) reserve(key string, now time.Time) (*rate.Reservation, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.limit == rate.Inf {
		return nil, time.Time{}
	}
	e, retryAt := s.getLocked(key, now)
	if e == nil {
		return nil, retryAt
	}
	r := e.lim.ReserveN(now, 1) // always OK: burst >= 1, no limit on the delay
	s.refreshLocked(e, now)
	return r, time.Time{}
}

// cancel gives back the token r reserved for key, if r is not nil.
func (s *shard) cancel(key string, r *rate.Reservation, now time.Time) {
	if r == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r.CancelAt(now)
	// The key cannot have been evicted: r kept its bucket short of full.
	if e, ok := s.m[key]; ok {
		s.refreshLocked(e, now)
	}
}

// getLocked returns key's entry, creating it if need be. If the table is
// full and no key is idle, it returns nil and when the first key will be.
func (s *shard) getLocked(key string, now time.Time) (*entry, time.Time) {
	if e, ok := s.m[key]; ok {
		return e, time.Time{}
	}
	if len(s.m) >= s.max && !s.evictLocked(now) {
		return nil, s.byFull[0].fullAt
	}
	e := &entry{key: key, lim: rate.NewLimiter(s.limit, s.burst), fullAt: now}
	s.m[key] = e
	heap.Push(&s.byFull, e)
	return e, time.Time{}
}

// evictLocked forgets the key that refilled first, if its bucket is full at
// now, and reports whether it did. It checks the bucket itself rather than
// trusting fullAt, so rounding can never free a key that still owes time.
func (s *shard) evictLocked(now time.Time) bool {
	for len(s.byFull) > 0 {
		e := s.byFull[0]
		if e.fullAt.After(now) {
			return false
		}
		if at := s.fullAtLocked(e, now); at.After(now) {
			e.fullAt = at
			heap.Fix(&s.byFull, 0)
			continue
		}
		heap.Pop(&s.byFull)
		delete(s.m, e.key)
		if s.evictions != nil {
			s.evictions.Add(1)
		}
		return true
	}
	return false
}

// refreshLocked records when e's bucket will be full again after its tokens
// changed.
func (s *shard) refreshLocked(e *entry, now time.Time) {
	if at := s.fullAtLocked(e, now); !at.Equal(e.fullAt) {
		e.fullAt = at
		heap.Fix(&s.byFull, e.index)
	}
}

// fullAtLocked computes when e's bucket holds burst tokens again, rounding
// up so the key is never taken as idle early.
func (s *shard) fullAtLocked(e *entry, now time.Time) time.Time {
	missing := float64(s.burst) - e.lim.TokensAt(now)
	if missing <= 0 {
		return now
	}
	ns := math.Ceil(missing/float64(s.limit)*1e9) + 1
	if ns > float64(math.MaxInt64/2) {
		ns = float64(math.MaxInt64 / 2)
	}
	return now.Add(time.Duration(ns))
}

func (s *shard) setRate(r rate.Limit, burst int, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limit, s.burst = r, burst
	if r == rate.Inf {
		// Nothing is limited: forget every key (reservations already made
		// keep their time).
		clear(s.m)
		s.byFull = nil
		return
	}
	for _, e := range s.byFull {
		e.lim.SetLimitAt(now, r)
		e.lim.SetBurstAt(now, burst)
		e.fullAt = s.fullAtLocked(e, now)
	}
	heap.Init(&s.byFull)
}

func (s *shard) tokens(into map[string]float64, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, e := range s.m {
		into[k] = e.lim.TokensAt(now)
	}
}

// fullHeap orders entries by fullAt, soonest first (container/heap).
type fullHeap []*entry

func (h fullHeap) Len() int           { return len(h) }
func (h fullHeap) Less(i, j int) bool { return h[i].fullAt.Before(h[j].fullAt) }
func (h fullHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *fullHeap) Push(x any) {
	e := x.(*entry)
	e.index = len(*h)
	*h = append(*h, e)
}
func (h *fullHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}
