package resolver

import (
	"testing"
	"time"
)

// TestUpstream_SetAside drives one resolver's health by hand: three misses
// in a row set it aside, an answer in between resets the count, after the
// cooldown a single lookup gets to try it, and an abandoned trial leaves
// the next lookup to try.
func TestUpstream_SetAside(t *testing.T) {
	const cool = 30 * time.Second
	t0 := time.Unix(1700000000, 0)
	u := &upstream{server: "192.0.2.53:53"}

	u.report(t0, attemptMissed, false, cool)
	u.report(t0, attemptMissed, false, cool)
	u.report(t0, attemptAnswered, false, cool)
	u.report(t0, attemptMissed, false, cool)
	u.report(t0, attemptMissed, false, cool)
	if ok, _ := u.claim(t0); !ok || !u.stats().Up {
		t.Fatalf("after miss, miss, answer, miss, miss: claim = false, want still in rotation")
	}
	u.report(t0, attemptMissed, false, cool)
	if st := u.stats(); st.Up || st.SetAside != 1 {
		t.Fatalf("after 3 misses in a row: %+v, want set aside once", st)
	}
	if ok, _ := u.claim(t0.Add(cool - time.Second)); ok {
		t.Errorf("claim during the cooldown = true, want false")
	}
	after := t0.Add(cool)
	if ok, trial := u.claim(after); !ok || !trial {
		t.Fatalf("claim after the cooldown = %v, %v; want a trial", ok, trial)
	}
	if ok, _ := u.claim(after); ok {
		t.Errorf("second claim while a trial is out = true, want false")
	}
	u.report(after, attemptAbandoned, true, cool)
	if ok, trial := u.claim(after); !ok || !trial {
		t.Fatalf("claim after an abandoned trial = %v, %v; want another trial", ok, trial)
	}
	u.report(after, attemptMissed, true, cool)
	if st := u.stats(); st.Up || st.SetAside != 2 {
		t.Errorf("after a missed trial: %+v, want set aside twice", st)
	}
	if ok, _ := u.claim(after.Add(cool - time.Second)); ok {
		t.Errorf("claim within a cooldown of the missed trial = true, want false")
	}
	again := after.Add(cool)
	if ok, trial := u.claim(again); !ok || !trial {
		t.Fatalf("claim after the second cooldown = %v, %v; want a trial", ok, trial)
	}
	u.report(again, attemptAnswered, true, cool)
	if ok, trial := u.claim(again); !ok || trial || !u.stats().Up {
		t.Errorf("after an answered trial: claim = %v, %v, up %v; want in rotation", ok, trial, u.stats().Up)
	}
}

// TestResolver_Pick checks the order of choice: the next resolver in turn
// not yet asked, then one asked already, skipping those set aside, and
// every one set aside still gives one.
func TestResolver_Pick(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	r := mustNew(t, Config{Servers: "a:53,b:53,c:53", Timeout: time.Second, Retries: 2, Now: func() time.Time { return t0 }})
	all := func(int) bool { return true }
	pick := func(start int, asked []bool) int {
		u, _, ok := r.pick(start, asked, all)
		if !ok {
			t.Fatalf("pick(%d, %v) found none", start, asked)
		}
		return u
	}
	if got := pick(1, []bool{false, false, false}); got != 1 {
		t.Errorf("fresh lookup starting at 1 picked %d", got)
	}
	if got := pick(1, []bool{false, true, false}); got != 2 {
		t.Errorf("after asking 1 picked %d, want 2", got)
	}
	if got := pick(1, []bool{true, true, true}); got != 1 {
		t.Errorf("with every one asked picked %d, want 1", got)
	}
	r.ups[2].downUntil = t0.Add(time.Minute)
	if got := pick(1, []bool{false, true, false}); got != 0 {
		t.Errorf("with 2 set aside picked %d, want 0", got)
	}
	r.ups[0].downUntil, r.ups[1].downUntil = t0.Add(time.Minute), t0.Add(time.Minute)
	if got := pick(1, []bool{false, true, false}); got != 2 {
		t.Errorf("with every one set aside picked %d, want 2 (the next not asked)", got)
	}
	if _, _, ok := r.pick(0, []bool{false, false, false}, func(int) bool { return false }); ok {
		t.Errorf("pick with nothing useful = ok, want none")
	}
}

// mustNew returns a Client for cfg or fails tb.
func mustNew(tb testing.TB, cfg Config) *Client {
	tb.Helper()
	r, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}
