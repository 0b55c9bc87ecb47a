package concurrency

import (
	"bytes"
	"math"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"syscall"
	"time"
)

// Signals is one reading of the process's own load over an interval: how
// long runnable goroutines waited for a CPU (the Go scheduler's latency,
// which holds the time a DNS answer or a handshake's bytes wait to be
// processed after they arrived), how busy its CPUs and the machine's were,
// and how much memory the runtime holds.
type Signals struct {
	SchedP99 time.Duration // 99th percentile of the scheduler's latency
	CPU      float64       // CPU time used over wall time × GOMAXPROCS, 0..1
	// MachineCPU is the share of the machine's CPU time spent busy, by
	// any process at normal priority or above (niced work and waits for
	// I/O count as idle), 0..1; 0 where the kernel does not say (outside
	// Linux).
	MachineCPU float64
	Memory     uint64 // bytes the runtime holds from the OS and uses
	MemLimit   uint64 // the runtime's memory limit (GOMEMLIMIT); MaxInt64 when unset
}

// Busy is the larger of the process's and the machine's CPU shares: when
// either is near 1, more visits at once cannot get more CPU, only wait
// longer for it.
func (s Signals) Busy() float64 { return max(s.CPU, s.MachineCPU) }

// probe reads the runtime's cumulative metrics and turns two readings into
// Signals. It is not safe for concurrent use.
type probe struct {
	samples []metrics.Sample
	buckets []float64 // upper bounds of the latency histogram
	counts  []uint64  // its counts at the last reading
	cpu     time.Duration
	at      time.Time
	machine cpuTimes // the machine's CPU times at the last reading
}

const (
	schedLatencies = "/sched/latencies:seconds"
	memTotal       = "/memory/classes/total:bytes"
	memReleased    = "/memory/classes/heap/released:bytes"
	memLimit       = "/gc/gomemlimit:bytes"
)

func newProbe() *probe {
	p := &probe{samples: []metrics.Sample{{Name: schedLatencies}, {Name: memTotal}, {Name: memReleased}, {Name: memLimit}}}
	p.read()
	return p
}

// read takes a reading and returns the signals since the last one.
func (p *probe) read() Signals {
	metrics.Read(p.samples)
	now, cpu := time.Now(), processCPU()
	var s Signals
	if h := p.samples[0].Value; h.Kind() == metrics.KindFloat64Histogram {
		s.SchedP99 = p.p99(h.Float64Histogram())
	}
	if v := p.samples[1].Value; v.Kind() == metrics.KindUint64 {
		s.Memory = v.Uint64() - min(v.Uint64(), p.samples[2].Value.Uint64())
	}
	s.MemLimit = math.MaxInt64
	if v := p.samples[3].Value; v.Kind() == metrics.KindUint64 {
		s.MemLimit = v.Uint64()
	}
	if !p.at.IsZero() {
		if wall := now.Sub(p.at); wall > 0 {
			s.CPU = float64(cpu-p.cpu) / float64(wall) / float64(runtime.GOMAXPROCS(0))
		}
	}
	machine := readCPUTimes()
	if busy, total := machine.since(p.machine); total > 0 {
		s.MachineCPU = float64(busy) / float64(total)
	}
	p.cpu, p.at, p.machine = cpu, now, machine
	return s
}

// p99 returns the 99th percentile of the latencies counted since the last
// reading (the upper bound of its bucket), and keeps h's counts.
func (p *probe) p99(h *metrics.Float64Histogram) time.Duration {
	if len(p.counts) != len(h.Counts) {
		p.counts = make([]uint64, len(h.Counts))
		p.buckets = h.Buckets
	}
	var total uint64
	for i, c := range h.Counts {
		total += c - min(c, p.counts[i])
	}
	var out time.Duration
	if total > 0 {
		want := total - total/100
		var seen uint64
		for i, c := range h.Counts {
			seen += c - min(c, p.counts[i])
			if seen >= want {
				out = bucketBound(p.buckets[i+1])
				break
			}
		}
	}
	copy(p.counts, h.Counts)
	return out
}

// bucketBound is a histogram bucket's upper bound as a duration; the last
// bucket's is +Inf, taken as a minute.
func bucketBound(sec float64) time.Duration {
	if math.IsInf(sec, 1) || sec > 60 {
		return time.Minute
	}
	return time.Duration(sec * float64(time.Second))
}

// processCPU is the process's CPU time so far, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuTimes is the machine's CPU time so far, in the kernel's ticks: busy
// (user, system, interrupts, and time stolen by a hypervisor) and in all.
type cpuTimes struct{ busy, total uint64 }

// since returns the ticks busy and in all between last and t.
func (t cpuTimes) since(last cpuTimes) (busy, total uint64) {
	if t.total <= last.total || t.busy < last.busy {
		return 0, 0
	}
	return t.busy - last.busy, t.total - last.total
}

// readCPUTimes reads the first line of /proc/stat: "cpu user nice system
// idle iowait irq softirq steal ..."; zero where there is none.
func readCPUTimes() cpuTimes {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := bytes.Fields(line)
	if len(f) < 9 || string(f[0]) != "cpu" {
		return cpuTimes{}
	}
	var n [8]uint64
	for i := range n {
		if n[i], err = strconv.ParseUint(string(f[i+1]), 10, 64); err != nil {
			return cpuTimes{}
		}
	}
	user, nice, system, idle, iowait, irq, softirq, steal := n[0], n[1], n[2], n[3], n[4], n[5], n[6], n[7]
	busy := user + system + irq + softirq + steal
	return cpuTimes{busy: busy, total: busy + nice + idle + iowait}
}
