package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// The faults, by the name the table prints.
var chaosFaultNames = map[string]string{
	"kill":          "SIGKILL a probe, start it again",
	"stop":          "SIGSTOP a probe past its lease, SIGCONT",
	"redis-restart": "Redis restarted with its data",
	"redis-wipe":    "Redis restarted empty, last export imported",
	"ingest-down":   "ingest endpoint down, then up",
	"disk-full":     "a probe's disk full (tmpfs), restarted",
	"net-redis":     "probes-Redis latency and resets (proxy)",
	"net-ingest":    "probes-ingest latency and resets (proxy)",
}

// chaosKindOrder is the order of the table's rows.
var chaosKindOrder = []string{"kill", "stop", "redis-restart", "redis-wipe", "ingest-down", "disk-full", "net-redis", "net-ingest"}

// chaosSlot is one probe of the fleet: the same command started again
// after each kill or halt.
type chaosSlot struct {
	name, out string
	mnt       string // the tmpfs holding --out (and the state dir); "" when mount was refused
	runs      []*chaosRun
	fault     *chaosEvent // the fault working on this probe, if any
	relaunch  time.Time   // when a failed start is tried again
}

// chaosRun is one process of a slot.
type chaosRun struct {
	runOut
	start, end time.Time
	offset     int64  // size of --out when it started: its lines come after
	fate       string // "killed", "halted", "start-failed", "exited"; "" while it runs or after SIGTERM
	stops      []time.Time
	batches    []outBatch // its --out lines, read at the end
}

func (s *chaosSlot) cur() *chaosRun { return s.runs[len(s.runs)-1] }

// running reports whether r's process has not exited.
func (r *chaosRun) running() bool {
	select {
	case <-r.p.done:
		return false
	default:
		return true
	}
}

// chaosEvent is one injected fault.
type chaosEvent struct {
	kind       string
	slot       *chaosSlot
	begin, end time.Time
	due        time.Time // when it is to end
	filler     string    // disk-full: the file that fills the tmpfs
	note       string
}

// newSlot makes the slot's directory, a tmpfs when mount is permitted.
func (c *chaos) newSlot(name string) *chaosSlot {
	t := c.t
	s := &chaosSlot{name: name}
	dir := mustMkdir(t, filepath.Join(c.dir, name))
	size := "64m"
	if c.cfg.long {
		size = "512m"
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Logf("%s: the disk-full fault is skipped: mount -t tmpfs is not permitted here (%v: %s)", name, err, strings.TrimSpace(string(out)))
	} else {
		s.mnt = dir
		t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	}
	s.out = filepath.Join(dir, name+".jsonl")
	return s
}

// launch starts the slot's probe, always with the same command.
func (c *chaos) launch(s *chaosSlot) {
	args := append(append([]string(nil), c.probeArgs...), "--out", s.out, "--probe", s.name)
	if c.stateFlag != "" {
		args = append(args, c.stateFlag, filepath.Join(filepath.Dir(s.out), "state"))
	}
	var off int64
	if fi, err := os.Stat(s.out); err == nil {
		off = fi.Size()
	}
	r := &chaosRun{start: time.Now(), offset: off}
	r.name, r.path = fmt.Sprintf("%s#%d", s.name, len(s.runs)+1), s.out
	r.p = startSpyder(c.t, args...)
	s.runs = append(s.runs, r)
}

// supervise notices probes that exited, says why, and starts them again.
// A start refused because Redis does not answer (it is down, or the proxy
// reset the check) is tried again a second later.
func (c *chaos) supervise() {
	for _, s := range c.slots {
		r := s.cur()
		if r.running() || (s.fault != nil && s.fault.kind == "disk-full") {
			continue
		}
		if r.fate == "" {
			r.end = time.Now()
			lines := strings.Split(strings.TrimSpace(r.p.log()), "\n")
			last := lines[len(lines)-1]
			switch {
			case strings.Contains(last, "does not answer") && len(logLines(r.p.log(), "start")) == 0:
				r.fate = "start-failed"
			case strings.HasPrefix(last, "spyder: redis ") && strings.Contains(last, ": move the old spool from ") &&
				c.window(r.end, "net-redis", "redis-restart", "redis-wipe", "") != "":
				// Its setup, before any lease, lost its connection to a
				// Redis fault (the proxy reset it, or Redis went down).
				r.fate = "start-failed"
			case c.filledUnder(s, r) && strings.HasPrefix(last, "spyder: ") && strings.Contains(last, "no space left on device"):
				// It met the full disk just before the fault ended, and
				// took a while to stop.
				r.fate, r.killed = "halted", true
			default:
				r.fate = "exited"
				r.killed = true // it may have died inside a write
				c.exits = append(c.exits, fmt.Sprintf("%s exited by itself after %v (%v): %s",
					r.name, r.end.Sub(r.start).Round(time.Millisecond), r.p.err, last))
			}
			s.relaunch = time.Now().Add(time.Second)
		}
		if time.Now().After(s.relaunch) {
			c.launch(s)
		}
	}
}

// filledUnder reports whether a disk-full fault on slot s began while r
// ran: r's exit on a full disk is that fault's doing, even when r stopped
// only after the fault ended.
func (c *chaos) filledUnder(s *chaosSlot, r *chaosRun) bool {
	for _, e := range c.events {
		if e.kind == "disk-full" && e.slot == s && e.begin.After(r.start) {
			return true
		}
	}
	return false
}

// kinds lists the faults this machine can inject.
func (c *chaos) kinds() []string {
	var ks []string
	for _, k := range chaosKindOrder {
		if k == "disk-full" && c.slots[0].mnt == "" {
			continue
		}
		ks = append(ks, k)
	}
	return ks
}

// busy reports whether a fault of kind is under way.
func (c *chaos) busy(kind string) bool {
	for _, e := range c.active {
		if e.kind == kind {
			return true
		}
	}
	return false
}

// available reports whether kind can begin now; for the faults on one
// probe, it returns a probe free of faults.
func (c *chaos) available(kind string) (*chaosSlot, bool) {
	switch kind {
	case "kill", "stop", "disk-full":
		for _, i := range c.rnd.Perm(len(c.slots)) {
			s := c.slots[i]
			if s.fault == nil && s.cur().running() && time.Since(s.cur().start) > time.Second {
				return s, true
			}
		}
		return nil, false
	case "redis-restart", "redis-wipe":
		return nil, !c.busy("redis-restart") && !c.busy("redis-wipe")
	}
	return nil, !c.busy(kind)
}

// between draws a duration in [lo, hi), both scaled up in the long run.
func (c *chaos) between(lo, hi time.Duration) time.Duration {
	if c.cfg.long {
		lo, hi = 3*lo, 3*hi
	}
	return lo + time.Duration(c.rnd.Int64N(int64(hi-lo)))
}

// begin injects a fault of kind, or with substitute of another kind that
// can begin now, and reports whether it did.
func (c *chaos) begin(kind string, substitute bool) bool {
	s, ok := c.available(kind)
	if !ok && !substitute {
		return false
	}
	if !ok {
		var can []string
		for _, k := range c.kinds() {
			if _, ok := c.available(k); ok {
				can = append(can, k)
			}
		}
		if len(can) == 0 {
			return false
		}
		kind = can[c.rnd.IntN(len(can))]
		s, _ = c.available(kind)
	}
	e := &chaosEvent{kind: kind, slot: s, begin: time.Now()}
	c.events = append(c.events, e)
	switch kind {
	case "kill":
		r := s.cur()
		r.p.cmd.Process.Signal(syscall.SIGKILL)
		<-r.p.done
		r.fate, r.killed, r.end = "killed", true, time.Now()
		e.end, e.note = time.Now(), r.name
		c.launch(s)
		return true
	case "stop":
		r := s.cur()
		r.p.cmd.Process.Signal(syscall.SIGSTOP)
		r.stops = append(r.stops, time.Now())
		e.due, e.note = time.Now().Add(c.cfg.lease+time.Second+time.Duration(c.rnd.Int64N(int64(3*time.Second)))), r.name
	case "redis-restart":
		c.srv.Stop()
		e.due = time.Now().Add(c.between(time.Second, 4*time.Second))
	case "redis-wipe":
		n := c.spoolLen()
		c.srv.Stop()
		if err := c.srv.Wipe(); err != nil {
			c.t.Fatal(err)
		}
		c.wipes = append(c.wipes, chaosWipe{at: time.Now(), snap: c.snap, spoolLen: n})
		e.due = time.Now().Add(c.between(time.Second, 3*time.Second))
	case "ingest-down":
		c.ingest.down()
		e.due = time.Now().Add(c.between(4*time.Second, 8*time.Second))
	case "disk-full":
		e.filler, e.note = fill(c.t, s.mnt), s.cur().name
		e.due = time.Now().Add(20 * time.Second)
	case "net-redis":
		c.redisPx.setRough(true, 40*time.Millisecond, 0.01)
		e.due = time.Now().Add(c.between(3*time.Second, 8*time.Second))
	case "net-ingest":
		c.ingestPx.setRough(true, 100*time.Millisecond, 0.05)
		e.due = time.Now().Add(c.between(3*time.Second, 8*time.Second))
	}
	if s != nil {
		s.fault = e
	}
	c.active = append(c.active, e)
	return true
}

// endDue ends the faults whose time is up (all of them with all), and a
// disk-full fault as soon as its probe has stopped.
func (c *chaos) endDue(all bool) {
	var still []*chaosEvent
	for _, e := range c.active {
		halted := e.kind == "disk-full" && !e.slot.cur().running()
		if all || time.Now().After(e.due) || halted {
			c.end(e)
		} else {
			still = append(still, e)
		}
	}
	c.active = still
}

// end heals what e broke.
func (c *chaos) end(e *chaosEvent) {
	t := c.t
	e.end = time.Now()
	if e.slot != nil {
		e.slot.fault = nil
	}
	switch e.kind {
	case "stop":
		e.slot.cur().p.cmd.Process.Signal(syscall.SIGCONT)
	case "redis-restart":
		c.srv.Restart(t)
	case "redis-wipe":
		c.srv.Restart(t)
		c.restore()
	case "ingest-down":
		if err := c.ingest.up(); err != nil {
			t.Fatalf("ingest endpoint up again: %v", err)
		}
	case "disk-full":
		os.Remove(e.filler)
		r := e.slot.cur()
		if r.running() {
			e.note += " (did not write while full)"
			return
		}
		r.fate, r.killed, r.end = "halted", true, time.Now()
		lines := strings.Split(strings.TrimSpace(r.p.log()), "\n")
		if last := lines[len(lines)-1]; !strings.HasPrefix(last, "spyder: ") || !strings.Contains(last, "no space left on device") {
			t.Errorf("%s with its disk full: last line %q, want one line saying the disk is full", r.name, last)
		}
		c.launch(e.slot)
	case "net-redis":
		c.redisPx.setRough(false, 0, 0)
	case "net-ingest":
		c.ingestPx.setRough(false, 0, 0)
	}
}

// restore brings the queue back after Redis came back empty, the way the
// docs/guarantees.md says: stop the probes (what they keep stays in their state
// directories), delete what they wrote into the emptied queue since (an
// ack keeps its host's probe record even when its lease is gone), import
// the last export, seed again every host seeded so far (the ones the
// export holds are skipped) and start the probes again.
func (c *chaos) restore() {
	t := c.t
	c.supervise() // a probe that exited meanwhile is told apart from the ones stopped here
	c.stopAll()
	c.deleteState()
	if c.snap != nil {
		f := mustFile(t, "snapshot.jsonl", []byte(c.snap.text))
		if _, stderr, err := tryApp(t.Context(), append(append([]string{"queue", "import"}, c.direct...), f)...); err != nil {
			t.Errorf("queue import of the export from %v before, with the probes stopped and the state keys deleted: %v (state keys present: %s)\n%s",
				time.Since(c.snap.at).Round(time.Millisecond), err, c.stateKeys(), stderr)
		}
	}
	if _, stderr, err := tryApp(t.Context(), append(append([]string{"queue", "seed"}, c.direct...), mustDomains(t, c.seeded))...); err != nil {
		t.Errorf("queue seed after the restore: %v\n%s", err, stderr)
	}
	if len(c.wipes) > 0 {
		c.wipes[len(c.wipes)-1].restored = time.Now()
	}
	for _, s := range c.slots {
		c.launch(s)
	}
}

// stopAll stops every probe with SIGTERM (continuing a stopped one first)
// and waits for it.
func (c *chaos) stopAll() {
	for _, s := range c.slots {
		r := s.cur()
		if !r.running() {
			continue
		}
		r.p.cmd.Process.Signal(syscall.SIGCONT)
		r.p.cmd.Process.Signal(syscall.SIGTERM)
		err := r.p.wait(c.t, 90*time.Second)
		r.end = time.Now()
		switch {
		case s.fault != nil && s.fault.kind == "disk-full" && err != nil:
			r.fate, r.killed = "halted", true // its disk filled before it could stop; checked when the fault ends
		case err != nil:
			c.t.Errorf("%s after SIGTERM: %v\n%s", r.name, err, tail(r.p.log(), 2000))
		case s.fault != nil && s.fault.kind == "stop":
			r.fate, r.killed = "stopped-then-terminated", true
		}
	}
}

// deleteState deletes the queue's state keys, as the restore of docs/guarantees.md
// says to when an import is refused (not the spool).
func (c *chaos) deleteState() {
	rdb := redis.NewClient(&redis.Options{Addr: c.srv.Addr})
	defer rdb.Close()
	var ks []string
	for _, suffix := range []string{"", ":seen", ":leases", ":dead", ":processing", ":processing-noticed", ":probed"} {
		ks = append(ks, c.direct[3]+suffix)
	}
	// A store that keeps its hosts in a table of hashes names them
	// {key}:hosts#…; docs/guarantees.md says to delete those too.
	iter := rdb.Scan(c.t.Context(), 0, c.direct[3]+":hosts#*", 1000).Iterator()
	for iter.Next(c.t.Context()) {
		ks = append(ks, iter.Val())
	}
	if err := iter.Err(); err != nil {
		c.t.Fatalf("scan the host table's keys: %v", err)
	}
	if err := rdb.Del(c.t.Context(), ks...).Err(); err != nil {
		c.t.Fatalf("delete the state keys: %v", err)
	}
}

// fill writes a file on the tmpfs at dir until it is full, and returns
// its name.
func fill(t interface{ Fatalf(string, ...any) }, dir string) string {
	name := filepath.Join(dir, "filler")
	f, err := os.Create(name)
	if err != nil {
		t.Fatalf("fill %s: %v", dir, err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill %s: %v", dir, err)
			}
			return name
		}
	}
}

// spoolLen returns how many batches wait in the Redis ingest spool (-1
// when Redis does not answer).
func (c *chaos) spoolLen() int64 {
	rdb := redis.NewClient(&redis.Options{Addr: c.srv.Addr, MaxRetries: -1, DialTimeout: time.Second})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	n, err := rdb.XLen(ctx, c.direct[3]+":spool").Result()
	if err != nil {
		return -1
	}
	return n
}

// stateKeys names the queue's state keys that exist in Redis, with their
// sizes: what makes an import refuse the queue.
func (c *chaos) stateKeys() string {
	rdb := redis.NewClient(&redis.Options{Addr: c.srv.Addr, MaxRetries: -1, DialTimeout: time.Second})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var have []string
	for _, suffix := range []string{"", ":processing", ":dead", ":seen", ":leases", ":probed"} {
		k := c.direct[3] + suffix
		typ, err := rdb.Type(ctx, k).Result()
		if err != nil {
			return err.Error()
		}
		var n int64
		switch typ {
		case "list":
			n = rdb.LLen(ctx, k).Val()
		case "set":
			n = rdb.SCard(ctx, k).Val()
		case "zset":
			n = rdb.ZCard(ctx, k).Val()
		case "hash":
			n = rdb.HLen(ctx, k).Val()
		case "none":
			continue
		}
		have = append(have, fmt.Sprintf("%s (%s, %d)", k, typ, n))
	}
	if ks, err := rdb.Keys(ctx, c.direct[3]+":hosts#*").Result(); err == nil && len(ks) > 0 {
		have = append(have, fmt.Sprintf("%d keys %s:hosts#…", len(ks), c.direct[3]))
	}
	return strings.Join(have, ", ")
}
