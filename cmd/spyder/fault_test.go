package main

// The process-level fault suite: real spyder processes, a real
// redis-server and the simulated internet, broken on purpose. `make test`
// runs short versions; SPYDER_SOAK=1 (make soak) the long ones. Kill
// schedules are random: the seed is logged, and SPYDER_FAULT_SEED replays
// the same schedule (timing still varies from run to run).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/crawl/crawltest"
	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
)

// faultSoak reports whether the long versions run (make soak).
func faultSoak() bool { return os.Getenv("SPYDER_SOAK") != "" }

// faultLimit bounds a wait of a fault test: short, or long in soak.
func faultLimit(short time.Duration) time.Duration {
	if faultSoak() {
		return 10 * short
	}
	return short
}

// faultRand returns the random source of a fault schedule, seeded from
// SPYDER_FAULT_SEED when set, and logs the seed so a failure can be rerun.
func faultRand(t *testing.T) *rand.Rand {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SPYDER_FAULT_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("SPYDER_FAULT_SEED=%q: want an unsigned integer", s)
		}
		seed = n
	}
	t.Logf("fault seed %d (rerun the same schedule with SPYDER_FAULT_SEED=%d)", seed, seed)
	return rand.New(rand.NewPCG(seed, 0x5eed))
}

// runOut is what one spyder process wrote to its own --out file, and what
// the queue said about it after it died.
type runOut struct {
	name   string
	path   string
	p      *proc
	killed bool
	lines  []outLine
	// torn reports that the file ends in a partial line: the process died
	// inside a write. That batch was never acknowledged, so its hosts are
	// probed again and its nodes were never marked emitted.
	torn bool
	// unacked are hosts this process wrote but did not acknowledge: it was
	// killed holding their lease (they were still pending or in flight right
	// after it died), or the queue refused its ack because the lease had
	// expired (lease_lost). Only these may be written again.
	unacked map[string]bool
	// unmarked are hosts whose batch failed after it may have been written
	// (see noteFailures).
	unmarked map[string]bool
}

// outLine is one batch line: the hosts whose outcome it holds, and one key
// per node and edge it holds.
type outLine struct {
	hosts []string
	keys  []string
}

// read parses the run's output. A partial last line is left out while the
// process runs (a write in progress) and allowed after only if it was
// killed.
func (r *runOut) read(t *testing.T) {
	t.Helper()
	data, err := os.ReadFile(r.path)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	r.lines, r.torn = nil, false
	if i := bytes.LastIndexByte(data, '\n'); i < len(data)-1 {
		select {
		case <-r.p.done:
			if !r.killed {
				t.Fatalf("%s ends in a partial line though its process exited on its own: %.200q", r.path, data[i+1:])
			}
			r.torn = true
		default:
		}
		data = data[:i+1]
	}
	for n, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var b spyder.Batch
		if err := json.Unmarshal(line, &b); err != nil {
			t.Fatalf("%s line %d is not a batch: %v: %.200s", r.path, n+1, err, line)
		}
		r.lines = append(r.lines, batchKeys(&b))
	}
}

// hosts returns every host the run wrote.
func (r *runOut) hosts() map[string]bool {
	hs := map[string]bool{}
	for _, l := range r.lines {
		for _, h := range l.hosts {
			hs[h] = true
		}
	}
	return hs
}

// batchKeys names a batch's hosts, nodes and edges. A probed host's own node
// (the one with its TXT records) is told apart from the bare node of a host
// seen only as a target, as the batcher's seen set tells them apart.
func batchKeys(b *spyder.Batch) outLine {
	var l outLine
	probed := map[string]bool{}
	for _, p := range b.Outcomes {
		l.hosts = append(l.hosts, string(p.Host))
		probed[string(p.Host)] = true
	}
	for _, d := range b.NodesDomain {
		if probed[string(d.Host)] {
			l.keys = append(l.keys, "probed-node "+string(d.Host))
		} else {
			l.keys = append(l.keys, "domain-node "+string(d.Host))
		}
	}
	for _, n := range b.NodesIP {
		l.keys = append(l.keys, "ip-node "+n.IP)
	}
	for _, c := range b.NodesCert {
		l.keys = append(l.keys, "cert-node "+c.SPKISHA256)
	}
	for _, e := range b.Edges {
		l.keys = append(l.keys, "edge "+e.Type+" "+e.Source+" "+e.Target)
	}
	return l
}

// noteFailures reads the process's log for hosts whose write or ack went
// wrong, which may be probed again: lease_lost (the queue refused an ack,
// heartbeat or fail because the lease had expired), ack_error (the ack did
// not reach the queue, so the lease expires), and host_failed, fail_error or
// item_dead (the result's batch failed: if it was written, its seen-set mark
// is what failed, so its nodes and edges were never marked), and
// write_retry (the same, the batch written again once the queue answered).
func (r *runOut) noteFailures() {
	if r.unacked == nil {
		r.unacked, r.unmarked = map[string]bool{}, map[string]bool{}
	}
	for _, msg := range []string{"lease_lost", "ack_error", "host_failed", "fail_error", "item_dead", "write_retry", "write_refused"} {
		for _, l := range logLines(r.p.log(), msg) {
			h, ok := l["host"].(string)
			if !ok {
				continue
			}
			r.unacked[h] = true
			if msg != "ack_error" && (msg != "lease_lost" || l["during"] == "fail") {
				r.unmarked[h] = true
			}
		}
	}
}

// confirmed reports whether line i of r was marked in the seen set once
// written: unless it is the last complete line of a killed process (it died
// between the write and the mark; a torn last line means it died inside the
// write, after marking the line before), or its batch failed after the
// write.
func (r *runOut) confirmed(i int) bool {
	if r.killed && !r.torn && i == len(r.lines)-1 {
		return false
	}
	for _, h := range r.lines[i].hosts {
		if r.unmarked[h] {
			return false
		}
	}
	return true
}

// checkRepeats checks the merged output of runs against what the faults can
// explain:
//
//   - hosts: every write of a host except one was un-acked (runOut.unacked):
//     a host written by a process that acknowledged it is never written again;
//   - nodes and edges: the batcher checks the seen set (claiming what is
//     new, in a fleet), writes a batch and only then marks its keys, one
//     batch at a time per process. So the only batches whose keys may be
//     unmarked are the ones runOut.confirmed rules out: the last line of a
//     killed process, and a batch whose mark failed. Every other emission is
//     marked before anything later is checked: each node and edge appears at
//     most once outside those lines, except the edges of a host written more
//     than once, which do not pass through the seen set (only the probe
//     holding the host's lease writes them).
//
// It returns how many host writes were repeats.
func checkRepeats(t *testing.T, runs []*runOut) int {
	t.Helper()
	writes := map[string]int{}  // host → lines holding it
	allowed := map[string]int{} // host → un-acked writes of it
	type at struct{ run, line int }
	emitted := map[string][]at{}
	for ri, r := range runs {
		for li, l := range r.lines {
			for _, h := range l.hosts {
				writes[h]++
				if r.unacked[h] {
					allowed[h]++
				}
			}
			for _, k := range l.keys {
				emitted[k] = append(emitted[k], at{ri, li})
			}
		}
	}
	repeats := 0
	var bad []string
	for h, n := range writes {
		repeats += n - 1
		if n-1 > allowed[h] {
			var where []string
			for _, r := range runs {
				if r.hosts()[h] {
					where = append(where, fmt.Sprintf("%s(killed=%v unacked=%v)", r.name, r.killed, r.unacked[h]))
				}
			}
			bad = append(bad, fmt.Sprintf("%s written %d times, %d of them un-acked: %s", h, n, allowed[h], strings.Join(where, " ")))
		}
	}
	reportSorted(t, bad, "hosts", "host ")
	bad = bad[:0]
	for k, ats := range emitted {
		if f := strings.Fields(k); len(f) == 4 && f[0] == "edge" && writes[f[2]] > 1 {
			continue // a host probed again writes its own edges again (docs/output.md)
		}
		confirmed := 0
		var where []string
		for _, a := range ats {
			r := runs[a.run]
			where = append(where, fmt.Sprintf("%s line %d/%d (killed=%v torn=%v)", r.name, a.line+1, len(r.lines), r.killed, r.torn))
			if r.confirmed(a.line) {
				confirmed++
			}
		}
		if confirmed > 1 {
			bad = append(bad, fmt.Sprintf("%q emitted %d times, %d of them after the seen set was marked: %s", k, len(ats), confirmed, strings.Join(where, "; ")))
		}
	}
	reportSorted(t, bad, "nodes and edges", "")
	return repeats
}

// reportSorted fails t with the first 20 of bad, sorted, each after
// prefix, and says how many more of what there were.
func reportSorted(t *testing.T, bad []string, what, prefix string) {
	t.Helper()
	slices.Sort(bad)
	for i, b := range bad {
		if i == 20 {
			t.Errorf("... and %d more %s", len(bad)-20, what)
			return
		}
		t.Errorf("%s%s", prefix, b)
	}
}

// checkAllWritten fails unless the runs together wrote every seed and
// exactly the world's expected edges.
func checkAllWritten(t *testing.T, w *crawltest.World, runs []*runOut) {
	t.Helper()
	all := readOutputs(t, runs)
	checkEdges(t, w, all.Edges)
	logMissingEdgeSources(t, w, all)
	counts := probeCounts(all.Probes)
	missing := 0
	for _, h := range w.Seeds {
		if counts[h] == 0 {
			if missing++; missing <= 20 {
				t.Errorf("host %s never written (%s)", h, w.Describe(h))
			}
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d hosts never written", missing, len(w.Seeds))
	}
}

// logMissingEdgeSources logs every outcome written of the first hosts whose
// expected edges are missing, so that a failure tells a probe that timed
// out from a write that was lost.
func logMissingEdgeSources(t *testing.T, w *crawltest.World, all output) {
	t.Helper()
	have, _ := edgeSet(all.Edges)
	written := map[spyder.Edge]bool{}
	for _, e := range have {
		written[e] = true
	}
	want, _ := edgeSet(w.Expected)
	hosts := map[string]bool{}
	for _, e := range want {
		if !written[e] && len(hosts) < 5 {
			hosts[e.Source] = true
		}
	}
	for _, p := range all.Probes {
		if hosts[string(p.Host)] {
			t.Logf("host %s, whose expected edges are missing, was written as %+v (%s)", p.Host, p.Steps, w.Describe(string(p.Host)))
		}
	}
}

// readOutputs reads every run's output like mustReadBatches, leaving out a
// torn last line.
func readOutputs(t *testing.T, runs []*runOut) output {
	t.Helper()
	var out output
	for _, r := range runs {
		data, err := os.ReadFile(r.path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if r.torn {
			data = data[:bytes.LastIndexByte(data, '\n')+1]
		}
		out.add(t, data, r.path)
	}
	return out
}

// statsJSON is `spyder queue stats --json`.
type statsJSON struct {
	Pending    int64 `json:"pending"`
	Processing int64 `json:"processing"`
	Dead       int64 `json:"dead"`
	Seen       int64 `json:"seen"`
}

func mustQueueStats(t *testing.T, backend ...string) statsJSON {
	t.Helper()
	var st statsJSON
	out := runApp(t, append([]string{"queue", "stats", "--json"}, backend...)...)
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("queue stats --json: %v: %q", err, out)
	}
	return st
}

// checkFinished fails unless every seeded host is done: nothing pending,
// processing or dead, and all of them seen.
func checkFinished(t *testing.T, w *crawltest.World, backend ...string) {
	t.Helper()
	st := mustQueueStats(t, backend...)
	if st.Pending != 0 || st.Processing != 0 || st.Dead != 0 || st.Seen != int64(len(w.Seeds)) {
		t.Errorf("queue stats at the end = %+v, want pending 0, processing 0, dead 0, seen %d", st, len(w.Seeds))
	}
}

// openHosts exports the queue and returns the hosts of its pending and of
// its processing records: the hosts not done. A bbolt file a process killed
// at once never created holds nothing.
func openHosts(t *testing.T, backend ...string) (export string, pending, processing map[string]bool) {
	t.Helper()
	pending, processing = map[string]bool{}, map[string]bool{}
	if backend[0] == "--db" {
		if _, err := os.Stat(backend[1]); errors.Is(err, os.ErrNotExist) {
			return "", pending, processing
		}
	}
	export = runApp(t, append([]string{"queue", "export"}, backend...)...)
	pending, processing = openHostsOf(t, export)
	return export, pending, processing
}

// killedBySIGKILL reports whether the exited process p died of SIGKILL.
func killedBySIGKILL(p *proc) bool {
	ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// afterKill records what the queue holds of a process just killed: the
// hosts it wrote that are still pending or in flight were not acknowledged.
// It returns how many there are, and how many hosts are in flight.
func (r *runOut) afterKill(t *testing.T, backend ...string) (unacked, inFlight int) {
	t.Helper()
	r.killed = true
	r.read(t)
	_, pending, processing := openHosts(t, backend...)
	r.noteFailures()
	for h := range r.hosts() {
		if pending[h] || processing[h] {
			r.unacked[h] = true
			unacked++
		}
	}
	return unacked, len(processing)
}

// TestFault_SIGKILLStorm_Bolt crawls on one bbolt file with spyder killed
// by SIGKILL at random moments (while seeding, recovering, probing, writing)
// and started again each time, with or without --domains, until a run ends
// on its own. It proves: every host done (nothing pending, in flight or
// dead), every expected edge written; a host written by a run that
// acknowledged it is never written again, and a killed run leaves at most
// --concurrency hosts written but not acknowledged, which the next run
// hands back at once (lease_recovered); no node or edge is written twice
// except out of the one batch a killed run may have written without marking.
func TestFault_SIGKILLStorm_Bolt(t *testing.T) {
	t.Parallel()
	hosts, kills, maxDelay := 600, 8, 1600*time.Millisecond
	if faultSoak() {
		hosts, kills, maxDelay = 5000, 40, 3*time.Second // kills spread over the crawl
	}
	const conc = 32
	rnd := faultRand(t)
	w := crawltest.Start(t, crawltest.Options{Hosts: hosts, Seed: 61, HTTPLatency: 10 * time.Millisecond, NoRequestLog: true})
	dir := t.TempDir()
	backend := []string{"--db", filepath.Join(dir, "spyder.db")}
	domains := mustDomains(t, w.Seeds)
	wargs := worldArgs(t, w)
	start := time.Now()

	var runs []*runOut
	seeded, killed, inFlight := false, 0, 0
	for i := 0; ; i++ {
		if time.Since(start) > faultLimit(3*time.Minute) {
			t.Fatalf("no run finished the crawl after %d runs in %v", i, time.Since(start))
		}
		r := &runOut{name: fmt.Sprintf("run%02d", i), path: filepath.Join(dir, fmt.Sprintf("run%02d.jsonl", i))}
		args := []string{"run", "--out", r.path, "--probe", r.name, "--concurrency", strconv.Itoa(conc)}
		if !seeded || rnd.IntN(3) == 0 {
			args = append(args, "--domains", domains)
		}
		r.p = startSpyder(t, append(append(args, backend...), wargs...)...)
		runs = append(runs, r)
		delay := time.Duration(rnd.Int64N(int64(maxDelay)))
		if killed < kills {
			select {
			case <-r.p.done:
			case <-time.After(delay):
				r.p.cmd.Process.Signal(syscall.SIGKILL)
				<-r.p.done
			}
		} else if err := r.p.wait(t, faultLimit(2*time.Minute)); err != nil {
			t.Fatalf("%s: %v\n%s", r.name, err, r.p.log())
		}
		seeded = seeded || len(logLines(r.p.log(), "seeded")) > 0
		if rec := logLines(r.p.log(), "lease_recovered"); len(rec) > 0 {
			if n, _ := rec[0]["count"].(float64); int(n) != inFlight {
				t.Errorf("%s recovered %v leases, want the %d the killed runs left in flight", r.name, rec[0]["count"], inFlight)
			}
		} else if inFlight > 0 && !killedBySIGKILL(r.p) {
			t.Errorf("%s did not log lease_recovered though the runs before left %d hosts in flight", r.name, inFlight)
		}
		if !killedBySIGKILL(r.p) {
			if r.p.err != nil {
				t.Fatalf("%s: %v\n%s", r.name, r.p.err, r.p.log())
			}
			r.read(t)
			r.noteFailures()
			if stop := logLines(r.p.log(), "stop"); len(stop) > 0 {
				t.Logf("%s finished: done %v in %v", r.name, stop[0]["done"], stop[0]["elapsed"])
			}
			break
		}
		killed++
		var unacked int
		unacked, inFlight = r.afterKill(t, backend...)
		t.Logf("%s killed after %v: wrote %d hosts (%d lines, torn=%v), %d of them not acknowledged; %d in flight",
			r.name, delay.Round(time.Millisecond), len(r.hosts()), len(r.lines), r.torn, unacked, inFlight)
		if unacked > conc {
			t.Errorf("%s left %d written hosts unacknowledged, more than --concurrency %d", r.name, unacked, conc)
		}
	}

	checkFinished(t, w, backend...)
	checkAllWritten(t, w, runs)
	repeats := checkRepeats(t, runs)
	if repeats > killed*conc {
		t.Errorf("%d repeated host writes over %d kills, more than kills × --concurrency = %d", repeats, killed, killed*conc)
	}
	torn := 0
	for _, r := range runs {
		if r.torn {
			torn++
		}
	}
	t.Logf("%d hosts, %d runs, %d killed, %d repeated host writes, %d torn last lines, %v",
		hosts, len(runs), killed, repeats, torn, time.Since(start).Round(time.Millisecond))
}

// TestFault_SIGKILLStorm_Redis runs a fleet of three processes on one Redis
// queue and kills one of them with SIGKILL at random moments, starting a
// replacement each time, until the queue is empty. Leases are short (--lease
// 2s) so a dead process's hosts come back quickly. It proves the same as
// the bbolt storm: every host done and every expected edge written; a host
// is written again only after a write whose process was killed holding its
// lease or lost the lease; a killed process leaves at most --concurrency
// written hosts unacknowledged; no node or edge appears twice except out of
// a killed process's last, unmarked batch.
func TestFault_SIGKILLStorm_Redis(t *testing.T) {
	t.Parallel()
	hosts, kills := 600, 6
	if faultSoak() {
		hosts, kills = 5000, 30
	}
	const conc, fleet = 32, 3
	rnd := faultRand(t)
	w := crawltest.Start(t, crawltest.Options{Hosts: hosts, Seed: 62, HTTPLatency: 10 * time.Millisecond, NoRequestLog: true})
	dir := t.TempDir()
	backend := []string{"--redis", redistest.Addr(t), "--queue-key", redistest.Prefix(t)}
	runApp(t, append(append([]string{"queue", "seed"}, backend...), mustDomains(t, w.Seeds))...)
	wargs := worldArgs(t, w)
	start := time.Now()

	var runs []*runOut
	launch := func() *runOut {
		r := &runOut{name: fmt.Sprintf("probe%02d", len(runs))}
		r.path = filepath.Join(dir, r.name+".jsonl")
		// Every lease expiry counts as an attempt; this test expires leases
		// on purpose, so the poison-host limit is set out of its way.
		args := []string{"run", "--exit-when-empty", "--out", r.path, "--probe", r.name, "--concurrency", strconv.Itoa(conc),
			"--lease", "2s", "--max-attempts", "1000"}
		r.p = startSpyder(t, append(append(args, backend...), wargs...)...)
		runs = append(runs, r)
		return r
	}
	live := make([]*runOut, fleet)
	for i := range live {
		live[i] = launch()
	}
	killed := 0
	for killed < kills {
		time.Sleep(time.Duration(200+rnd.IntN(1200)) * time.Millisecond)
		i := rnd.IntN(fleet)
		v := live[i]
		v.p.cmd.Process.Signal(syscall.SIGKILL)
		<-v.p.done
		if !killedBySIGKILL(v.p) {
			break // the fleet ran out of work
		}
		killed++
		unacked, _ := v.afterKill(t, backend...)
		t.Logf("%s killed: wrote %d hosts, %d of them not acknowledged", v.name, len(v.hosts()), unacked)
		if lost := len(v.unacked) - unacked; unacked > conc {
			t.Errorf("%s left %d written hosts unacknowledged (plus %d lease_lost), more than --concurrency %d", v.name, unacked, lost, conc)
		}
		live[i] = launch()
	}
	t.Logf("%d kills done after %v", killed, time.Since(start).Round(time.Millisecond))
	for _, r := range live {
		if err := r.p.wait(t, faultLimit(2*time.Minute)); err != nil {
			t.Fatalf("%s: %v\n%s", r.name, err, r.p.log())
		}
		r.read(t)
		r.noteFailures()
		if stop := logLines(r.p.log(), "stop"); len(stop) > 0 {
			t.Logf("%s finished after %v: done %v in %v", r.name, time.Since(start).Round(time.Millisecond), stop[0]["done"], stop[0]["elapsed"])
		}
	}

	checkFinished(t, w, backend...)
	checkAllWritten(t, w, runs)
	repeats := checkRepeats(t, runs)
	lost := 0
	for _, r := range runs {
		lost += len(logLines(r.p.log(), "lease_lost"))
	}
	if repeats > killed*conc+lost {
		t.Errorf("%d repeated host writes over %d kills and %d lost leases, more than kills × --concurrency + lost = %d", repeats, killed, lost, killed*conc+lost)
	}
	t.Logf("%d hosts, %d processes, %d killed, %d lease_lost lines, %d repeated host writes, %v",
		hosts, len(runs), killed, lost, repeats, time.Since(start).Round(time.Millisecond))
}

// cpuTime returns the CPU time (user and system) process pid has used, from
// /proc/PID/stat (Linux; USER_HZ is 100 there).
func cpuTime(t *testing.T, pid int) time.Duration {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatalf("read CPU time of process %d: %v", pid, err)
	}
	// The fields after the command name: state is the first, utime the
	// 12th and stime the 13th.
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	if len(f) < 13 {
		t.Fatalf("/proc/%d/stat has %d fields after the name", pid, len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("/proc/%d/stat: utime %q stime %q", pid, f[11], f[12])
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// redisOutage stops srv for d, with the fleet's processes running, then
// starts it again (with its data when it persists, else empty). It fails
// the test if a process exits meanwhile, burns more than a fifth of a core,
// logs more than 20 lines a second, or retries leasing more than once a
// second (it waits leaseRetry, 2s, between tries): workers must back off,
// not spin. before runs just before the restart.
func redisOutage(t *testing.T, srv *redistest.Server, runs []*runOut, d time.Duration, before func()) {
	t.Helper()
	cpu0 := make([]time.Duration, len(runs))
	logs0, leaseErrs0 := make([]int, len(runs)), make([]int, len(runs))
	for i, r := range runs {
		cpu0[i], logs0[i] = cpuTime(t, r.p.cmd.Process.Pid), strings.Count(r.p.log(), "\n")
		leaseErrs0[i] = len(logLines(r.p.log(), "lease_error"))
	}
	srv.Stop()
	start := time.Now()
	time.Sleep(d) // the outage: real time in other processes, nothing to inject
	elapsed := time.Since(start)
	for i, r := range runs {
		select {
		case <-r.p.done:
			t.Fatalf("%s exited while Redis was down: %v\n%s", r.name, r.p.err, r.p.log())
		default:
		}
		cpu := cpuTime(t, r.p.cmd.Process.Pid) - cpu0[i]
		lines := strings.Count(r.p.log(), "\n") - logs0[i]
		leaseErrs := len(logLines(r.p.log(), "lease_error")) - leaseErrs0[i]
		t.Logf("%s while Redis was down for %v: %v CPU (%.1f%% of a core), %d log lines, %d of them lease_error",
			r.name, elapsed.Round(time.Millisecond), cpu, 100*cpu.Seconds()/elapsed.Seconds(), lines, leaseErrs)
		if cpu > elapsed/5 {
			t.Errorf("%s used %v of CPU in a %v outage: more than a fifth of a core, a hot loop?", r.name, cpu, elapsed)
		}
		if float64(lines) > 20*elapsed.Seconds() {
			t.Errorf("%s logged %d lines in a %v outage: more than 20 a second\n%s", r.name, lines, elapsed, r.p.log()[len(r.p.log())-2000:])
		}
		if leaseErrs == 0 && len(logLines(r.p.log(), "queue_unreachable")) == 0 {
			t.Errorf("%s logged neither lease_error nor queue_unreachable: did it notice the outage?", r.name)
		}
		if float64(leaseErrs) > 1+elapsed.Seconds() {
			t.Errorf("%s tried to lease %d times in a %v outage: more than once a second", r.name, leaseErrs, elapsed)
		}
	}
	if before != nil {
		before()
	}
	srv.Restart(t)
}

// outageWorld is the world of the outage tests: slow enough that the crawl
// is still going when Redis stops.
func outageWorld(t *testing.T, seed int64) (*crawltest.World, time.Duration) {
	hosts, outage := 300, 3500*time.Millisecond
	if faultSoak() {
		hosts, outage = 3000, 10*time.Second
	}
	return crawltest.Start(t, crawltest.Options{Hosts: hosts, Seed: seed, HTTPLatency: 30 * time.Millisecond, NoRequestLog: true}), outage
}

// startOutageFleet seeds the queue and starts a probe on it for each of
// extra, with those flags added.
func startOutageFleet(t *testing.T, w *crawltest.World, backend []string, extra ...[]string) []*runOut {
	runApp(t, append(append([]string{"queue", "seed"}, backend...), mustDomains(t, w.Seeds))...)
	wargs := worldArgs(t, w)
	dir := t.TempDir()
	var runs []*runOut
	for i, ex := range extra {
		r := &runOut{name: fmt.Sprintf("probe%d", i), path: filepath.Join(dir, fmt.Sprintf("probe%d.jsonl", i))}
		args := append([]string{"run", "--out", r.path, "--probe", r.name, "--concurrency", "16", "--lease", "3s"}, ex...)
		r.p = startSpyder(t, append(append(args, backend...), wargs...)...)
		runs = append(runs, r)
	}
	return runs
}

// written returns how many distinct hosts the runs have written so far.
func written(t *testing.T, runs []*runOut) int {
	hs := map[string]bool{}
	for _, r := range runs {
		r.read(t)
		for h := range r.hosts() {
			hs[h] = true
		}
	}
	return len(hs)
}

// TestFault_RedisOutage stops redis-server in the middle of a fleet crawl
// (two probes), for 3.5s (10s in soak), and starts it again.
//
// Persistent: Redis runs with appendonly/appendfsync always, so it comes
// back with its data. The probes back off while it is down (CPU and log
// lines bounded), reconnect, and finish on their own (--exit-when-empty):
// every host done, every expected edge written, a host written twice only
// if its ack or batch failed during the outage, and no node or edge twice
// except out of a batch whose mark failed.
//
// RestartedEmpty: Redis has no persistence and comes back empty. The probes
// keep running (no crash loop) and say the queue lost its state
// (queue_state_lost); the operator imports the `spyder queue export`
// snapshot taken before the outage, and the fleet finishes: every host
// done, the hosts done before the snapshot never written again, and no
// node or edge written twice within either side of the loss.
func TestFault_RedisOutage(t *testing.T) {
	t.Parallel()
	t.Run("Persistent", func(t *testing.T) {
		t.Parallel()
		w, outage := outageWorld(t, 63)
		srv := redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always")
		backend := []string{"--redis", srv.Addr, "--queue-key", "{spyder}:queue"}
		runs := startOutageFleet(t, w, backend, []string{"--exit-when-empty"}, []string{"--exit-when-empty"})
		waitFor(t, faultLimit(60*time.Second), "a quarter of the hosts written", func() bool { return written(t, runs) >= len(w.Seeds)/4 })
		redisOutage(t, srv, runs, outage, nil)
		for _, r := range runs {
			if err := r.p.wait(t, faultLimit(90*time.Second)); err != nil {
				t.Fatalf("%s after the outage: %v\n%s", r.name, err, r.p.log())
			}
			r.read(t)
			r.noteFailures()
			if len(logLines(r.p.log(), "queue_reachable")) == 0 {
				t.Errorf("%s did not log queue_reachable after Redis came back", r.name)
			}
		}
		checkFinished(t, w, backend...)
		checkAllWritten(t, w, runs)
		repeats := checkRepeats(t, runs)
		t.Logf("%d hosts, %d repeated host writes after the outage", len(w.Seeds), repeats)
	})
	t.Run("RestartedEmpty", func(t *testing.T) {
		t.Parallel()
		w, outage := outageWorld(t, 64)
		srv := redistest.Start(t)
		backend := []string{"--redis", srv.Addr, "--queue-key", "{spyder}:queue"}
		// Two fleet probes that run until signalled, and one that exits
		// when the queue is empty.
		runs := startOutageFleet(t, w, backend, nil, nil, []string{"--exit-when-empty"})
		waitFor(t, faultLimit(60*time.Second), "a quarter of the hosts written", func() bool { return written(t, runs) >= len(w.Seeds)/4 })
		snapshot, pending, processing := openHosts(t, backend...)
		snapFile := filepath.Join(t.TempDir(), "snapshot.jsonl")
		if err := os.WriteFile(snapFile, []byte(snapshot), 0o644); err != nil {
			t.Fatal(err)
		}
		doneAtSnapshot := map[string]bool{}
		for _, h := range w.Seeds {
			if !pending[h] && !processing[h] {
				doneAtSnapshot[h] = true
			}
		}
		waitFor(t, faultLimit(60*time.Second), "half of the hosts written", func() bool { return written(t, runs) >= len(w.Seeds)/2 })

		// Lines written before the restart were checked against the seen
		// set Redis loses; the ones after, against an empty one.
		cut := make([]int, len(runs))
		redisOutage(t, srv, runs, outage, func() {
			for i, r := range runs {
				r.read(t)
				cut[i] = len(r.lines)
			}
		})
		for _, r := range runs {
			waitFor(t, 30*time.Second, r.name+" to log queue_state_lost", func() bool {
				return len(logLines(r.p.log(), "queue_state_lost")) > 0
			})
		}
		// The probe that exits when the queue is empty must not take an
		// emptied queue for a finished crawl.
		quitter := runs[2]
		err := quitter.p.wait(t, 30*time.Second)
		if err == nil || !strings.Contains(quitter.p.log(), "lost its state") {
			t.Errorf("%s --exit-when-empty on a queue that lost its state: exit %v, want an error saying so\n%s", quitter.name, err, quitter.p.log())
		}
		quitter.read(t)
		quitter.noteFailures()
		if st := mustQueueStats(t, backend...); st.Seen >= int64(len(w.Seeds)/4) {
			t.Fatalf("Redis came back with %d seen hosts; it was to restart empty", st.Seen)
		}
		// As docs/guarantees.md's "When Redis loses its data" says: once the probes
		// have finished what they held (their acks keep probe records in
		// the emptied queue), clear the queue's keys and import.
		waitFor(t, 30*time.Second, "the probes to finish their hosts", func() bool {
			for _, p := range mustProbeBeats(t, backend...).Probes {
				if p.Inflight > 0 || p.Held > 0 {
					return false
				}
			}
			return true
		})
		clearQueueKeys(t, srv.Addr, "{spyder}:queue")
		t.Logf("importing the snapshot: %d hosts done before it, %d pending, %d in flight", len(doneAtSnapshot), len(pending), len(processing))
		runApp(t, append(append([]string{"queue", "import"}, backend...), snapFile)...)
		waitFor(t, faultLimit(90*time.Second), "the fleet to finish after the import", func() bool {
			st := mustQueueStats(t, backend...)
			return st.Pending == 0 && st.Processing == 0
		})
		for _, r := range runs[:2] {
			select {
			case <-r.p.done:
				t.Fatalf("%s exited before it was signalled: %v\n%s", r.name, r.p.err, r.p.log())
			default:
			}
			r.p.cmd.Process.Signal(syscall.SIGTERM)
			if err := r.p.wait(t, 60*time.Second); err != nil {
				t.Fatalf("%s after SIGTERM: %v\n%s", r.name, err, r.p.log())
			}
			r.read(t)
			r.noteFailures()
		}
		checkFinished(t, w, backend...)
		checkAllWritten(t, w, runs)
		counts := probeCounts(readOutputs(t, runs).Probes)
		redone := 0
		for h := range doneAtSnapshot {
			if counts[h] != 1 {
				t.Errorf("host %s, done before the snapshot, written %d times, want 1", h, counts[h])
			}
		}
		for _, n := range counts {
			redone += n - 1
		}
		// Each side of the loss is checked on its own: after it every node
		// and edge may be written once more.
		var before, after []*runOut
		for i, r := range runs {
			b, a := *r, *r
			b.lines, b.killed = r.lines[:cut[i]], false
			a.lines = r.lines[cut[i]:]
			before, after = append(before, &b), append(after, &a)
		}
		checkRepeats(t, before)
		checkRepeats(t, after)
		t.Logf("%d hosts, %d done before the snapshot, %d host writes repeated after the restore", len(w.Seeds), len(doneAtSnapshot), redone)
	})
}

// TestFault_PartialOutputLine resumes a crawl whose --out ends inside a
// batch line, as a run SIGKILLed in the middle of a write leaves it (the
// kernel may cut a write short for a fatal signal; the storms above rarely
// hit that instant, so the cut is made by hand here). The next run must
// start its batches on a line of their own: every line but the cut one
// parses, and every host is written.
func TestFault_PartialOutputLine(t *testing.T) {
	t.Parallel()
	w := crawltest.Start(t, crawltest.Options{Hosts: 40, Seed: 65})
	dir := t.TempDir()
	out := filepath.Join(dir, "graph.jsonl")
	whole := `{"probe_id":"p","run_id":"default","batch_id":"1","timestamp":1,"nodes_domain":[],"nodes_ip":[],"nodes_cert":[],"edges":[]}` + "\n"
	cut := `{"probe_id":"p","run_id":"default","batch_id":"2","timestamp":1,"nodes_dom`
	if err := os.WriteFile(out, []byte(whole+cut), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startSpyder(t, append([]string{"run", "--db", filepath.Join(dir, "spyder.db"), "--domains", mustDomains(t, w.Seeds),
		"--out", out}, worldArgs(t, w)...)...)
	if err := p.wait(t, 60*time.Second); err != nil {
		t.Fatalf("spyder run: %v\n%s", err, p.log())
	}
	if len(logLines(p.log(), "out_partial_line")) != 1 {
		t.Errorf("no out_partial_line warning for an --out ending inside a line:\n%s", p.log())
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) < 3 || lines[0]+"\n" != whole || lines[1] != cut {
		t.Fatalf("--out does not keep the whole line, then the cut one on its own line, then the new batches:\n%.1000s", data)
	}
	var got output
	got.add(t, []byte(strings.Join(lines[2:], "\n")), out)
	checkEdges(t, w, got.Edges)
	checkWrittenOnce(t, w.Seeds, got.Probes, " after the cut line")
}
