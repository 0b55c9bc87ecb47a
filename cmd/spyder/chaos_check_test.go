package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/spyder-crawler/spyder"
)

// outBatch is one batch line of a probe's --out.
type outBatch struct {
	id    string
	made  time.Time
	hosts []string
}

// chaosTally counts, per fault kind (and "lease-lost", "resend",
// "unexplained"), what the checks attributed to it.
type chaosTally struct {
	lost, hostRepeats, keyRepeats, resent map[string]int
}

// check runs every check of the soak and prints the fault table.
func (c *chaos) check() {
	t := c.t
	st, err := c.stats()
	if err != nil || st.Pending != 0 || st.Processing != 0 || st.Dead != 0 || st.Seen != int64(len(c.w.Seeds)) {
		t.Errorf("queue stats at the end = %+v (err %v), want pending 0, processing 0, dead 0, seen %d", st, err, len(c.w.Seeds))
	}
	for _, e := range c.exits {
		t.Errorf("no fault explains this exit: %s", e)
	}
	tal := chaosTally{lost: map[string]int{}, hostRepeats: map[string]int{}, keyRepeats: map[string]int{}, resent: map[string]int{}}
	got := c.ingest.deliveries()
	first := map[string]delivery{} // batch_id → its first delivery
	for _, d := range got {
		if f, ok := first[d.id]; ok {
			tal.resent[c.window(f.got, "net-ingest", "ingest-down", "kill", "stop", "redis-restart", "redis-wipe", "net-redis", "resend")]++
			continue
		}
		first[d.id] = d
	}
	written := c.readOuts()
	if c.checkLost(first, written, &tal) {
		c.checkEdges(first)
	} else {
		t.Errorf("the edges delivered are not compared with the world's: acknowledged output was lost (above), and edges with it")
	}
	c.checkRepeats(first, &tal)
	c.table(&tal, len(got), len(first))
}

// readOuts reads each process's lines of its slot's --out, and its log's
// failed hosts. A line that does not parse may only be the last of a
// process that died (it died inside the write).
func (c *chaos) readOuts() map[string]outBatch {
	t := c.t
	byHost := map[string]outBatch{}
	for _, s := range c.slots {
		data, err := os.ReadFile(s.out)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		for i, r := range s.runs {
			r.noteFailures()
			end := int64(len(data))
			if i+1 < len(s.runs) {
				end = s.runs[i+1].offset
			}
			lines := bytes.Split(data[min(r.offset, end):end], []byte("\n"))
			for n, line := range lines {
				if len(bytes.TrimSpace(line)) == 0 {
					continue
				}
				var b spyder.Batch
				if err := json.Unmarshal(line, &b); err != nil {
					if n < len(lines)-2 || r.fate == "" || r.fate == "start-failed" {
						t.Errorf("%s wrote a line that is not a batch (fate %q): %v: %.200s", r.name, r.fate, err, line)
					}
					r.torn = true
					continue
				}
				ob := outBatch{id: b.BatchID, made: time.Unix(b.Timestamp, 0)}
				for _, p := range b.Outcomes {
					ob.hosts = append(ob.hosts, string(p.Host))
					if _, ok := byHost[string(p.Host)]; !ok {
						byHost[string(p.Host)] = ob
					}
				}
				r.batches = append(r.batches, ob)
			}
		}
	}
	return byHost
}

// checkLost fails for every seed whose outcome never reached the endpoint,
// and for every batch a probe wrote to --out and went on to acknowledge
// that the endpoint never got: that is acknowledged output lost. It
// reports whether nothing was lost.
func (c *chaos) checkLost(first map[string]delivery, written map[string]outBatch, tal *chaosTally) bool {
	t := c.t
	delivered := map[string]bool{}
	for _, d := range first {
		for _, h := range d.line.hosts {
			delivered[h] = true
		}
	}
	var lost []string
	lostHosts := map[string]string{} // host → the fault its lost output is put down to
	for _, h := range c.w.Seeds {
		if !delivered[h] {
			b, ok := written[h]
			why := "unexplained"
			if ok {
				why = c.lostWhy(b.made)
			}
			lostHosts[h] = why
			lost = append(lost, fmt.Sprintf("%s (in --out batch %s at %v: %v; attributed to %s)", h, b.id, b.made.Format("15:04:05"), ok, why))
		}
	}
	missing := 0
	for _, s := range c.slots {
		for _, r := range s.runs {
			for i, b := range r.batches {
				if _, ok := first[b.id]; ok || (r.fate != "" && i == len(r.batches)-1) || slices.ContainsFunc(b.hosts, func(h string) bool { return r.unmarked[h] }) {
					continue
				}
				missing++
				for _, h := range b.hosts {
					lostHosts[h] = c.lostWhy(b.made)
				}
				if missing <= 10 {
					t.Errorf("%s wrote batch %s (%d hosts, made %v) to --out and acknowledged it, but it never reached the endpoint (%s)",
						r.name, b.id, len(b.hosts), b.made.Format("15:04:05"), c.lostWhy(b.made))
				}
			}
		}
	}
	for _, why := range lostHosts {
		tal.lost[why]++
	}
	reportSorted(t, lost, "hosts lost", "never delivered to the endpoint: ")
	if len(lost) > 0 || missing > 0 {
		t.Errorf("%d of %d hosts never delivered; %d acknowledged batches missing at the endpoint; %d hosts lost output (the table's HOSTS LOST)",
			len(lost), len(c.w.Seeds), missing, len(lostHosts))
		for _, w := range c.wipes {
			if w.spoolLen != 0 {
				t.Errorf("Redis restarted without its data at %v with %d batches in its ingest spool (%s:spool; -1: unknown): "+
					"those batches were acknowledged once spooled in Redis and went with its data. This check passes only once "+
					"a probe keeps undeliverable --ingest batches on its own disk (the local state dir of branch fallback; this binary's flag: %q)",
					w.at.Format("15:04:05"), w.spoolLen, c.direct[3], c.stateFlag)
			}
		}
	}
	return len(lost) == 0 && missing == 0
}

// lostWhy names the fault that may have lost a batch made at made: a
// Redis wipe after it while the Redis spool held batches, else an ingest
// outage around it.
func (c *chaos) lostWhy(made time.Time) string {
	for _, w := range c.wipes {
		if !w.at.Before(made.Add(-time.Second)) && w.spoolLen != 0 {
			return "redis-wipe"
		}
	}
	return c.window(made, "ingest-down", "net-ingest", "unexplained")
}

// window returns the first of kinds (the last is the default) of a fault
// under way within 10 s of at.
func (c *chaos) window(at time.Time, kinds ...string) string {
	for _, k := range kinds[:len(kinds)-1] {
		for _, e := range c.events {
			end := e.end
			if end.IsZero() {
				end = time.Now()
			}
			if e.kind == k && !at.Before(e.begin.Add(-time.Second)) && !at.After(end.Add(c.cfg.lease+10*time.Second)) {
				return k
			}
		}
	}
	return kinds[len(kinds)-1]
}

// checkEdges compares the endpoint's edges with the world's against what
// the probes acknowledged: no edge the world does not have, and every
// world edge unless the probe of the host it comes from acknowledged
// another outcome than the world's (a fetch or lookup that timed out on a
// starved machine writes fewer edges, and that outcome is the host's
// result). An edge from an address or a redirect hop is excused only when
// it is reached from such a host.
func (c *chaos) checkEdges(first map[string]delivery) {
	t, w := c.t, c.w
	degraded := map[string]string{} // host → the outcome acknowledged for it, not the world's
	var edges []spyder.Edge
	for _, d := range first {
		for _, k := range d.line.keys {
			if f := strings.Fields(k); f[0] == "edge" && len(f) == 4 {
				edges = append(edges, spyder.Edge{Type: f[1], Source: f[2], Target: f[3]})
			}
		}
		for h, o := range d.outcomes {
			if want, ok := w.PageOutcome[h]; ok && o != want {
				degraded[h] = o
			}
		}
	}
	for _, d := range first { // one write with the world's outcome has all the host's edges
		for h, o := range d.outcomes {
			if o == w.PageOutcome[h] {
				delete(degraded, h)
			}
		}
	}
	got, want := map[spyder.Edge]bool{}, map[spyder.Edge]bool{}
	for _, e := range edges {
		got[e] = true
	}
	reached := map[string]bool{} // an address or hop reached from a degraded host
	for _, e := range w.Expected {
		want[e] = true
		if _, ok := degraded[e.Source]; ok {
			reached[e.Target] = true
		}
	}
	var bad []string
	excused := 0
	for e := range want {
		_, fromDegraded := degraded[e.Source]
		_, seed := w.PageOutcome[e.Source]
		switch {
		case got[e]:
		case fromDegraded || (!seed && reached[e.Source]):
			excused++
		default:
			bad = append(bad, fmt.Sprintf("missing %s %s → %s", e.Type, e.Source, e.Target))
		}
	}
	for e := range got {
		if !want[e] {
			bad = append(bad, fmt.Sprintf("not in the world: %s %s → %s", e.Type, e.Source, e.Target))
		}
	}
	reportSorted(t, bad, "edge differences", "edges against the world's: ")
	if excused > 0 || len(degraded) > 0 {
		t.Logf("%d of the world's %d edges not written, all from the %d hosts whose probes acknowledged only another outcome than the world's (a lookup or fetch timed out: a starved or stopped probe): %s",
			excused, len(want), len(degraded), clipMap(degraded, 5))
	}
}

// clipMap formats up to n entries of m, sorted by key.
func clipMap(m map[string]string, n int) string {
	ks := slices.Sorted(maps.Keys(m))
	var parts []string
	for _, k := range ks[:min(n, len(ks))] {
		parts = append(parts, k+": "+m[k])
	}
	if len(ks) > n {
		parts = append(parts, fmt.Sprintf("and %d more", len(ks)-n))
	}
	return strings.Join(parts, ", ")
}

// runsAt returns the processes of slot probe alive around at.
func (c *chaos) runsAt(probe string, at time.Time) []*chaosRun {
	var rs []*chaosRun
	for _, s := range c.slots {
		if s.name != probe {
			continue
		}
		for _, r := range s.runs {
			end := r.end
			if end.IsZero() {
				end = time.Now()
			}
			if !at.Before(r.start.Add(-time.Second)) && !at.After(end.Add(time.Second)) {
				rs = append(rs, r)
			}
		}
	}
	return rs
}

// writerFate names what happened to the process that wrote b after it
// wrote it: killed, halted, stopped; "" when nothing did.
func (c *chaos) writerFate(b delivery) string {
	for _, r := range c.runsAt(b.probe, b.made) {
		switch r.fate {
		case "killed":
			return "kill"
		case "halted":
			return "disk-full"
		}
		for _, s := range r.stops {
			if !s.Before(b.made.Add(-2 * time.Second)) {
				return "stop"
			}
		}
	}
	return ""
}

// staleFate names what made the later writer b of a host write it after
// another probe had: b held a lease that expired while it was stopped, and
// finished the probe after SIGCONT ("stop"), or b was killed after its
// write, before it could learn that its lease was gone ("kill"). Anything
// else that lost b its lease shows in its log (writerLost).
func (c *chaos) staleFate(b delivery) string {
	for _, r := range c.runsAt(b.probe, b.made) {
		if r.fate == "killed" {
			return "kill"
		}
		for _, s := range r.stops {
			if s.Before(b.made.Add(time.Second)) && s.After(b.made.Add(-c.cfg.lease-10*time.Second)) {
				return "stop"
			}
		}
	}
	return ""
}

// writerLost reports whether the process that wrote b logged host h's
// lease lost or its ack or batch failed (unmarked: only its batch).
func (c *chaos) writerLost(b delivery, h string, unmarked bool) bool {
	for _, r := range c.runsAt(b.probe, b.made) {
		if (!unmarked && r.unacked[h]) || (unmarked && r.unmarked[h]) {
			return true
		}
	}
	return false
}

// wipeBetween returns a Redis wipe between a and b, after which h (when
// not "") was not done in the imported export. A write made between the
// wipe and the import counts as before it: its ack went into the emptied
// queue, whose keys the restore deletes, so the import queues the host
// again (docs/guarantees.md, "When Redis loses its data").
func (c *chaos) wipeBetween(a, b time.Time, h string) bool {
	for _, w := range c.wipes {
		end := w.at
		if w.restored.After(end) {
			end = w.restored
		}
		if a.After(end.Add(time.Second)) || w.at.After(b.Add(time.Second)) {
			continue
		}
		if h == "" || w.snap == nil || !w.snap.done[h] {
			return true
		}
	}
	return false
}

// writerLog returns, for a repeat no fault explains, what the processes
// that wrote b logged about host h and about stopping, and their fates:
// the evidence to find the repeat's cause.
func (c *chaos) writerLog(b delivery, h string) string {
	var sb strings.Builder
	for _, r := range c.runsAt(b.probe, b.made) {
		fmt.Fprintf(&sb, "\n\t%s (fate %q, %v to %v):", r.name, r.fate, r.start.Format("15:04:05.000"), r.end.Format("15:04:05.000"))
		for _, l := range strings.Split(r.p.log(), "\n") {
			if strings.Contains(l, `"`+h+`"`) || strings.Contains(l, "halt") || strings.Contains(l, "shutdown") ||
				strings.Contains(l, "held_") || strings.Contains(l, "ingest_") || strings.HasPrefix(l, "spyder: ") {
				fmt.Fprintf(&sb, "\n\t\t%.400s", l)
			}
		}
	}
	return sb.String()
}

// checkRepeats attributes every host written twice, and every node and
// edge delivered in two batches, to a fault docs/guarantees.md says repeats it;
// any other repeat fails the test.
func (c *chaos) checkRepeats(first map[string]delivery, tal *chaosTally) {
	hosts, keys := map[string][]delivery{}, map[string][]delivery{}
	for _, d := range first {
		for _, h := range d.line.hosts {
			hosts[h] = append(hosts[h], d)
		}
		for _, k := range d.line.keys {
			keys[k] = append(keys[k], d)
		}
	}
	var bad []string
	slow := []string{"redis-restart", "redis-wipe", "net-redis", "net-ingest", "ingest-down"}
	for h, ds := range hosts {
		slices.SortFunc(ds, func(a, b delivery) int { return a.made.Compare(b.made) })
		for i := 1; i < len(ds); i++ {
			a, b := ds[i-1], ds[i]
			why := ""
			switch {
			case c.wipeBetween(a.made, b.made, h):
				why = "redis-wipe"
			case c.writerFate(a) != "":
				why = c.writerFate(a)
			case c.writerLost(a, h, false):
				why = c.window(a.made, append(slices.Clone(slow), "stop", "lease-lost")...)
			case c.staleFate(b) != "":
				why = c.staleFate(b)
			case c.writerLost(b, h, false):
				why = c.window(b.made, append(slices.Clone(slow), "stop", "lease-lost")...)
			}
			if why == "" {
				logs := "" // what the writers logged, for the first few
				if len(bad) < 5 {
					logs = c.writerLog(a, h) + c.writerLog(b, h)
				}
				bad = append(bad, fmt.Sprintf("host %s in batch %s by %s at %v and again in %s by %s at %v%s",
					h, a.id, a.probe, a.made.Format("15:04:05"), b.id, b.probe, b.made.Format("15:04:05"), logs))
				why = "unexplained"
			}
			tal.hostRepeats[why]++
		}
	}
	for k, ds := range keys {
		slices.SortFunc(ds, func(a, b delivery) int { return a.made.Compare(b.made) })
		for i := 1; i < len(ds); i++ {
			a, b := ds[i-1], ds[i]
			why := ""
			switch {
			case c.wipeBetween(a.made, b.made, ""):
				why = "redis-wipe"
			case c.writerFate(a) != "":
				why = c.writerFate(a)
			case c.writerFate(b) != "":
				why = c.writerFate(b)
			case slices.ContainsFunc(a.line.hosts, func(h string) bool { return c.writerLost(a, h, true) }):
				why = c.window(a.made, append(slices.Clone(slow), "lease-lost")...)
			default:
				if why = c.window(a.made, append(slices.Clone(slow), "")...); why == "" {
					why = c.window(b.made, append(slices.Clone(slow), "")...)
				}
			}
			if why == "" {
				bad = append(bad, fmt.Sprintf("%q in batch %s by %s at %v and again in %s by %s at %v",
					k, a.id, a.probe, a.made.Format("15:04:05"), b.id, b.probe, b.made.Format("15:04:05")))
				why = "unexplained"
			}
			tal.keyRepeats[why]++
		}
	}
	reportSorted(c.t, bad, "repeats no fault explains", "repeat no fault explains: ")
}

// table logs each fault: how often it was injected, hosts lost, and the
// repeats attributed to it.
func (c *chaos) table(tal *chaosTally, deliveries, batches int) {
	n := map[string]int{}
	for _, e := range c.events {
		n[e.kind]++
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FAULT\tINJECTED\tHOSTS LOST\tHOST REPEATS\tNODE/EDGE REPEATS\tBATCHES RESENT")
	row := func(k, name, injected string) {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\n", name, injected, tal.lost[k], tal.hostRepeats[k], tal.keyRepeats[k], tal.resent[k])
	}
	for _, k := range chaosKindOrder {
		inj := fmt.Sprint(n[k])
		if k == "disk-full" && c.slots[0].mnt == "" {
			inj = "skipped (no mount)"
		}
		row(k, chaosFaultNames[k], inj)
	}
	row("lease-lost", "lease expired outside a fault (CPU starved)", "-")
	row("resend", "POST answer lost outside a fault", "-")
	row("unexplained", "unexplained (must be 0)", "-")
	tw.Flush()
	resets := c.redisPx.resetCount() + c.ingestPx.resetCount()
	procs := 0
	for _, s := range c.slots {
		procs += len(s.runs)
	}
	c.t.Logf("chaos soak: %d hosts, %d probe slots (%d processes), faults for %v, %d faults, %d connections reset by the proxies, "+
		"%d deliveries of %d batches, total %v\n%s", len(c.w.Seeds), len(c.slots), procs, c.cfg.faults, len(c.events), resets,
		deliveries, batches, time.Since(c.start).Round(time.Second), b.String())
}

// openHostsOf returns the hosts of the pending and processing records of
// a queue export.
func openHostsOf(t *testing.T, export string) (pending, processing map[string]bool) {
	t.Helper()
	pending, processing = map[string]bool{}, map[string]bool{}
	for _, line := range strings.Split(export, "\n") {
		if line == "" {
			continue
		}
		var r struct {
			Kind string `json:"kind"`
			Item struct {
				Host string `json:"host"`
			} `json:"item"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("queue export line %q: %v", line, err)
		}
		switch r.Kind {
		case "pending":
			pending[r.Item.Host] = true
		case "processing":
			processing[r.Item.Host] = true
		}
	}
	return pending, processing
}

// queueStatsOf is `spyder queue stats --json`, an error when the queue
// does not answer.
func queueStatsOf(t *testing.T, backend ...string) (statsJSON, error) {
	var st statsJSON
	out, stderr, err := tryApp(t.Context(), append([]string{"queue", "stats", "--json"}, backend...)...)
	if err != nil {
		return st, fmt.Errorf("%v: %s", err, stderr)
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		return st, fmt.Errorf("queue stats --json: %v: %q", err, out)
	}
	return st, nil
}
