package boltstore_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/queue"
	"github.com/spyder-crawler/spyder/store"
	"github.com/spyder-crawler/spyder/store/boltstore"
	"github.com/spyder-crawler/spyder/store/storetest"
)

// These tests take the disk away from under a working store: the file may
// not grow (RLIMIT_FSIZE, in a child process, so that only the child is
// limited), the file system is full (ENOSPC, a loop-mounted ext4 image) or
// it turns read-only mid-run (ext4 with errors=remount-ro, made to fail
// through /sys/fs/ext4/DEV/trigger_fs_error, the way a disk error does).
// Each time the failing call and every later one must return an error
// naming the file and the cause, the file must open again afterwards with
// Stats matching its contents, and nothing acked or spooled before the
// fault may be lost or come back.

const (
	faultHosts    = 2000
	faultWorkers  = 4
	faultSpoolPad = 128 << 10 // bytes per spooled batch: the file must grow soon
)

func faultHost(i int) host.Name { return host.Name(fmt.Sprintf("f%04d.com", i)) }

// faultLog is what a workload reported: acks and spool puts that returned
// nil (so must be durable), and the errors that stopped it.
type faultLog struct {
	mu      sync.Mutex
	acked   map[host.Name]bool
	spooled map[int]bool
	errs    []string // "OP: message"
	after   []string // "OP: message" of calls made after the fault
	lost    []string // hosts whose Ack said the lease was lost
	bad     []string // other things the workload saw go wrong
}

func newFaultLog() *faultLog {
	return &faultLog{acked: map[host.Name]bool{}, spooled: map[int]bool{}}
}

// line records one report line, as printed by the child process.
func (l *faultLog) line(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	op, rest, _ := strings.Cut(s, " ")
	switch op {
	case "ack":
		l.acked[host.Name(rest)] = true
	case "lost":
		l.lost = append(l.lost, rest)
	case "spool":
		n, _ := strconv.Atoi(rest)
		l.spooled[n] = true
	case "err":
		l.errs = append(l.errs, rest)
	case "after":
		l.after = append(l.after, rest)
	case "bad":
		l.bad = append(l.bad, rest)
	}
}

// faultLoad says what faultWork does besides leasing and acking.
type faultLoad struct {
	// batch is how many items a worker leases at once; 0 means 2.
	batch int
	// emit marks 100 output keys per host as emitted before the ack, which
	// makes the file grow as a crawl's output does. A host whose keys
	// cannot be marked is released and its worker stops, as a run would.
	emit bool
	// spool has one goroutine spool a batch every few milliseconds.
	spool bool
	// started, if set, is called after the first acks, to inject a fault
	// mid-run.
	started func()
}

// faultWork works through the queue as a run does: a few workers lease
// hosts and ack them until the first error anywhere (or the end of the
// work), then release what they hold and stop. Then it tries every kind of
// call once more. It reports through say, one line per event (see
// faultLog.line).
func faultWork(s *boltstore.Store, sp store.Spool, load faultLoad, say0 func(string)) {
	ctx := context.Background()
	quit := make(chan struct{})
	var quitOnce sync.Once
	say := func(line string) {
		if strings.HasPrefix(line, "err ") {
			quitOnce.Do(func() { close(quit) })
		}
		say0(line)
	}
	stopping := func() bool {
		select {
		case <-quit:
			return true
		default:
			return false
		}
	}
	em, err := s.Emitted()
	if err != nil {
		say("err " + oneLine(err))
		return
	}
	var wg sync.WaitGroup
	var once sync.Once
	var acks sync.WaitGroup
	acks.Add(1)
	for range faultWorkers {
		wg.Go(func() {
			defer once.Do(acks.Done)
			n := 0
			for {
				ls, err := s.Lease(ctx, max(load.batch, 2), time.Hour, 0)
				if err != nil {
					say("err " + oneLine(err))
					return
				}
				if len(ls) == 0 {
					return
				}
				for i, l := range ls {
					if stopping() {
						if _, err := s.Release(ctx, ls[i:]); err != nil {
							say("err " + oneLine(err))
						}
						return
					}
					if load.emit {
						keys := make([]string, 100)
						for i := range keys {
							keys[i] = fmt.Sprintf("edge %s %d", l.Item.Host, i)
						}
						if err := em.Mark(ctx, "run", keys); err != nil {
							say("err " + oneLine(err))
							if _, err := s.Release(ctx, ls[i:]); err != nil {
								say("err " + oneLine(err))
							}
							return
						}
					}
					err := storetest.Ack(ctx, s, l)
					switch {
					case errors.Is(err, queue.ErrLeaseLost):
						// Only this process leases: the lease was
						// never recorded. Stop before the item is
						// leased again and again.
						say("lost " + string(l.Item.Host))
						return
					case err != nil:
						say("err " + oneLine(err))
						return
					default:
						say("ack " + string(l.Item.Host))
					}
					if n++; n == 25 {
						once.Do(acks.Done)
					}
				}
			}
		})
	}
	if load.spool {
		wg.Go(func() {
			pad := bytes.Repeat([]byte("x"), faultSpoolPad)
			for n := 0; n < 1000; n++ {
				data := fmt.Appendf(nil, `{"n":%d,"pad":"%s"}`, n, pad)
				if err := sp.Put(ctx, data); err != nil {
					say("err " + oneLine(err))
					return
				}
				say(fmt.Sprintf("spool %d", n))
				time.Sleep(5 * time.Millisecond) // a batch now and then
			}
		})
	}
	acks.Wait()
	if load.started != nil {
		load.started()
	}
	wg.Wait()

	// After the fault: every call answers at once, with an error or not,
	// and a Lease never hands out an item its commit did not record.
	ls, err := s.Lease(ctx, 1, time.Hour, 0)
	say("after lease: " + oneLine(err))
	if err != nil && (!errors.Is(err, store.ErrWritesRefused) || !errors.Is(err, queue.ErrClosed)) {
		say("bad Lease() error after the fault does not match store.ErrWritesRefused and queue.ErrClosed: " + oneLine(err))
	}
	if err == nil && len(ls) == 1 {
		err := storetest.Ack(ctx, s, ls[0])
		if errors.Is(err, queue.ErrLeaseLost) {
			say("lost " + string(ls[0].Item.Host))
		} else if err == nil {
			say("ack " + string(ls[0].Item.Host))
		}
	}
	_, err = s.Seed(ctx, []host.Name{"after-fault.com"})
	say("after seed: " + oneLine(err))
	_, err = s.Reclaim(ctx, time.Minute, 3)
	say("after reclaim: " + oneLine(err))
}

func oneLine(err error) string {
	if err == nil {
		return "<nil>"
	}
	return strings.ReplaceAll(err.Error(), "\n", " ")
}

// mustFaultDB makes a store file at path holding faultHosts pending hosts.
func mustFaultDB(tb testing.TB, path string) []host.Name {
	tb.Helper()
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		tb.Fatalf("Open() error: %v", err)
	}
	defer s.Close()
	hosts := make([]host.Name, faultHosts)
	for i := range hosts {
		hosts[i] = faultHost(i)
	}
	if res, err := s.Seed(context.Background(), hosts); err != nil || res.Added != faultHosts {
		tb.Fatalf("Seed() = %+v, %v", res, err)
	}
	if _, err := s.Spool(); err != nil {
		tb.Fatal(err)
	}
	return hosts
}

// checkFaultReport checks what the workload saw: at least one error, each
// naming the file and the cause, and no lease handed out that the file did
// not record.
func checkFaultReport(t *testing.T, path string, log *faultLog, cause string) {
	t.Helper()
	if len(log.errs) == 0 {
		t.Fatalf("the workload met no error (acked %d, spooled %d): the fault was not injected", len(log.acked), len(log.spooled))
	}
	t.Logf("acked %d, spooled %d before the fault; errors:\n%s\nafter:\n%s", len(log.acked), len(log.spooled), strings.Join(log.errs, "\n"), strings.Join(log.after, "\n"))
	for _, e := range log.errs {
		if !strings.Contains(e, path) || !strings.Contains(e, cause) {
			t.Errorf("error %q: want it to name %s and say %q", e, path, cause)
		}
	}
	for _, e := range log.after {
		if !strings.HasSuffix(e, "<nil>") && !strings.Contains(e, path) {
			t.Errorf("call after the fault: %q, want an error naming %s", e, path)
		}
	}
	for _, b := range log.bad {
		t.Error(b)
	}
	if len(log.lost) > 0 {
		t.Errorf("Ack() of %d leases said the lease was lost (e.g. %s): Lease handed out items its commit did not record", len(log.lost), log.lost[0])
	}
}

// checkReopen opens the file after the fault and checks that it is whole:
// Stats agrees with a Dump, every host is in exactly one collection unless
// it was acked, no acked host came back, every spooled batch is there, and
// the queue drains.
func checkReopen(t *testing.T, path string, hosts []host.Name, log *faultLog) {
	t.Helper()
	ctx := context.Background()
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatalf("reopen after the fault: %v", err)
	}
	defer s.Close()
	where := map[host.Name][]string{}
	var held []queue.Lease
	var n [4]int64
	err = s.Dump(ctx, func(r queue.Record) error {
		switch r.Kind {
		case queue.KindSeen:
			n[3]++
			return nil
		case queue.KindPending:
			n[0]++
		case queue.KindProcessing:
			n[1]++
			held = append(held, queue.Lease{Item: *r.Item, ID: r.LeaseID})
		case queue.KindDead:
			n[2]++
		}
		if r.Item == nil {
			t.Errorf("undecodable %s record %q after the fault", r.Kind, r.Raw)
			return nil
		}
		where[r.Item.Host] = append(where[r.Item.Host], r.Kind)
		return nil
	})
	if err != nil {
		t.Fatalf("Dump() after the fault: %v", err)
	}
	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatalf("Stats() after the fault: %v", err)
	}
	if got := [4]int64{st.Pending, st.Processing, st.Dead, st.Seen}; got != n {
		t.Errorf("Stats() after the fault = %v, want %v as dumped", got, n)
	}
	gone := 0
	for _, h := range hosts {
		in := where[h]
		switch {
		case log.acked[h] && len(in) > 0:
			t.Errorf("%s was acked before the fault but is %v", h, in)
		case log.acked[h]:
		case len(in) == 0:
			gone++
		case len(in) > 1:
			t.Errorf("%s is in %v, want exactly one collection", h, in)
		}
	}
	if gone > 0 {
		t.Errorf("%d hosts neither acked nor in any collection: lost", gone)
	}
	if st.Dead != 0 {
		t.Errorf("%d hosts dead after the fault, want 0", st.Dead)
	}

	sp, err := s.Spool()
	if err != nil {
		t.Fatalf("Spool() after the fault: %v", err)
	}
	got := map[int]int{}
	for {
		id, data, err := sp.Peek(ctx)
		if err != nil {
			t.Fatalf("spool Peek() after the fault: %v", err)
		}
		if id == "" {
			break
		}
		var k int
		if _, err := fmt.Sscanf(string(data), `{"n":%d,`, &k); err != nil || len(data) < faultSpoolPad {
			t.Errorf("spooled batch %s is damaged: %q…", id, data[:min(len(data), 40)])
		}
		got[k]++
		if err := sp.Remove(ctx, id); err != nil {
			t.Fatalf("spool Remove(): %v", err)
		}
	}
	for k := range log.spooled {
		if got[k] != 1 {
			t.Errorf("batch %d spooled before the fault is in the spool %d times, want 1", k, got[k])
		}
	}

	// The file carries on: what was held is handed back, and all drains.
	if _, err := s.Release(ctx, held); err != nil {
		t.Fatalf("Release() after the fault: %v", err)
	}
	for {
		ls, err := s.Lease(ctx, 100, time.Hour, 0)
		if err != nil {
			t.Fatalf("Lease() after the fault: %v", err)
		}
		if len(ls) == 0 {
			break
		}
		var wg sync.WaitGroup // concurrent acks share one commit
		for _, l := range ls {
			if log.acked[l.Item.Host] {
				t.Errorf("%s leased again after it was acked", l.Item.Host)
			}
			wg.Go(func() {
				if err := storetest.Ack(ctx, s, l); err != nil {
					t.Errorf("Ack() after the fault: %v", err)
				}
			})
		}
		wg.Wait()
	}
	if st, err := s.Stats(ctx); err != nil || st.Pending != 0 || st.Processing != 0 {
		t.Errorf("Stats() after draining = %+v, %v; want nothing pending or processing", st, err)
	}
}

// Environment of TestStore_FileSizeLimitChild.
const (
	fsizeDBEnv   = "SPYDER_BOLTSTORE_FSIZE_DB"
	fsizeModeEnv = "SPYDER_BOLTSTORE_FSIZE_MODE"
)

// TestStore_FileSizeLimitChild is the process TestStore_FileSizeLimit
// limits with RLIMIT_FSIZE (a write past the limit fails with EFBIG). In
// mode "grow" the file may not grow from the start, as on a full disk, while
// output keys and spooled batches ask it to; in mode "nowrite" no write at
// all succeeds once the first hosts are acked, as when the file system turns
// read-only or the disk fails mid-run, so a Lease or Ack commit is what
// fails. In mode "bigtx" the file may not grow and workers lease 500 items
// at once: a Lease commit needs more room than the file has free, while an
// Ack would fit; the store must not let that Ack report the lease lost, and
// the items be leased and probed again and again. It runs faultWork and
// prints the report lines.
func TestStore_FileSizeLimitChild(t *testing.T) {
	path := os.Getenv(fsizeDBEnv)
	if path == "" {
		t.Skip("run by TestStore_FileSizeLimit")
	}
	s, err := boltstore.Open(path, boltstore.Options{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer s.Close()
	sp, err := s.Spool()
	if err != nil {
		t.Fatal(err)
	}
	signal.Ignore(syscall.SIGXFSZ) // Go drops it anyway; a C program would die
	limit := func(n uint64) {
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: n, Max: n}); err != nil {
			panic(err)
		}
	}
	var load faultLoad
	switch mode := os.Getenv(fsizeModeEnv); mode {
	case "grow":
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		limit(uint64(fi.Size()))
		load = faultLoad{emit: true, spool: true}
	case "bigtx":
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		limit(uint64(fi.Size()))
		load = faultLoad{batch: 500}
	case "nowrite":
		load = faultLoad{started: func() { limit(0) }}
	default:
		t.Fatalf("mode %q", mode)
	}
	var mu sync.Mutex
	faultWork(s, sp, load, func(line string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Println(line)
	})
}

// TestStore_FileSizeLimit runs TestStore_FileSizeLimitChild in both modes
// (needs no root) and checks its report and the file afterwards.
func TestStore_FileSizeLimit(t *testing.T) {
	for _, mode := range []string{"grow", "bigtx", "nowrite"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "spyder.db")
			hosts := mustFaultDB(t, path)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestStore_FileSizeLimitChild$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), fsizeDBEnv+"="+path, fsizeModeEnv+"="+mode)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatalf("start child: %v", err)
			}
			log := newFaultLog()
			var rest []string
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				switch op, _, _ := strings.Cut(sc.Text(), " "); op {
				case "ack", "lost", "spool", "err", "after", "bad":
					log.line(sc.Text())
				default:
					rest = append(rest, sc.Text())
				}
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("child: %v\nstdout:\n%s\nstderr:\n%s", err, strings.Join(rest, "\n"), stderr.String())
			}
			checkFaultReport(t, path, log, "file too large")
			checkReopen(t, path, hosts, log)
		})
	}
}

// mustExt4 loop-mounts a fresh ext4 file system of size bytes that turns
// read-only on an error (errors=remount-ro, as root file systems are
// usually mounted) and returns its mount point and its name under
// /sys/fs/ext4. It skips the test, saying why, when that cannot be done:
// not root, no mkfs.ext4, no loop device (a container). The file system is
// unmounted at cleanup.
func mustExt4(t *testing.T, size int64) (dir, dev string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to loop-mount an ext4 image")
	}
	mkfs, err := exec.LookPath("mkfs.ext4")
	if err != nil {
		t.Skip("needs mkfs.ext4 (e2fsprogs)")
	}
	tmp := t.TempDir()
	img, dir := filepath.Join(tmp, "fs.img"), filepath.Join(tmp, "mnt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, size); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(mkfs, "-q", "-F", "-m", "0", img).CombinedOutput(); err != nil {
		t.Skipf("mkfs.ext4: %v: %s", err, out)
	}
	mount := func() {
		t.Helper()
		if out, err := exec.Command("mount", "-o", "loop,errors=remount-ro", img, dir).CombinedOutput(); err != nil {
			t.Skipf("cannot loop-mount an ext4 image here: %v: %s", err, out)
		}
	}
	mount()
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	mounts, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mounts), "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[1] == dir && f[2] == "ext4" {
			dev = filepath.Base(f[0])
		}
	}
	if dev == "" {
		t.Fatalf("%s is not in /proc/self/mounts after mount", dir)
	}
	return dir, dev
}

// remount unmounts the ext4 file system at dir and mounts its image again,
// read-write, as after a reboot.
func remount(t *testing.T, dir string) {
	t.Helper()
	img := filepath.Join(filepath.Dir(dir), "fs.img")
	if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
		t.Fatalf("umount: %v: %s", err, out)
	}
	if out, err := exec.Command("mount", "-o", "loop,errors=remount-ro", img, dir).CombinedOutput(); err != nil {
		t.Fatalf("mount again: %v: %s", err, out)
	}
}

// fillDisk takes every free block of the file system with a file at path.
func fillDisk(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var st syscall.Statfs_t
	if err := syscall.Statfs(filepath.Dir(path), &st); err != nil {
		return err
	}
	// Allocate nearly all at once (writing it with the disk nearly full is
	// slow: ext4 flushes its journal before each ENOSPC), then the rest.
	if free := int64(st.Bavail) * st.Bsize; free > 64<<10 {
		if err := syscall.Fallocate(int(f.Fd()), 0, 0, free-64<<10); err != nil {
			return fmt.Errorf("fallocate: %w", err)
		}
	}
	if _, err := f.Seek(0, 2); err != nil {
		return err
	}
	buf := make([]byte, 4<<10)
	for {
		if _, err = f.Write(buf); err != nil {
			break
		}
	}
	if !errors.Is(err, syscall.ENOSPC) {
		return fmt.Errorf("filling the disk: %w, want ENOSPC", err)
	}
	return nil
}

// runFault opens the store at path, runs faultWork on it in this process
// and closes it.
func runFault(t *testing.T, path string, o boltstore.Options, load faultLoad) *faultLog {
	t.Helper()
	s, err := boltstore.Open(path, o)
	if err != nil {
		t.Fatalf("Open() error: %v", err)
	}
	sp, err := s.Spool()
	if err != nil {
		t.Fatal(err)
	}
	log := newFaultLog()
	done := make(chan struct{})
	go func() {
		defer close(done)
		faultWork(s, sp, load, log.line)
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("the workload did not end within 60s of the fault (acked %d, errors %q)", len(log.acked), log.errs)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close() after the fault: %v", err)
	}
	return log
}

// TestStore_DiskFull_ENOSPC fills a real file system (ext4, root only)
// under a working store: the writes that need room fail naming the file,
// and once space is freed the file opens whole with every ack kept.
func TestStore_DiskFull_ENOSPC(t *testing.T) {
	dir, _ := mustExt4(t, 32<<20)
	path := filepath.Join(dir, "spyder.db")
	hosts := mustFaultDB(t, path)
	fill := func() {
		if err := fillDisk(filepath.Join(dir, "filler")); err != nil {
			t.Error(err)
		}
	}
	// No fsync: the page cache is enough to tell a full disk (ENOSPC comes
	// from write), and commits are three times faster on a loop device.
	log := runFault(t, path, boltstore.Options{NoSync: true}, faultLoad{emit: true, spool: true, started: fill})
	checkFaultReport(t, path, log, "no space left on device")
	if err := os.Remove(filepath.Join(dir, "filler")); err != nil {
		t.Fatal(err)
	}
	// ext4 reuses freed blocks once its journal has committed.
	for start := time.Now(); ; time.Sleep(10 * time.Millisecond) {
		syscall.Sync()
		var st syscall.Statfs_t
		if err := syscall.Statfs(dir, &st); err != nil {
			t.Fatal(err)
		}
		if free := int64(st.Bavail) * st.Bsize; free > 2<<20 {
			break
		} else if time.Since(start) > 10*time.Second {
			t.Fatalf("%d bytes free 10s after the filler was removed", free)
		}
	}
	checkReopen(t, path, hosts, log)
}

// TestStore_ReadOnlyMidRun makes a real file system (ext4, root only) turn
// read-only under a working store, as the kernel does on a disk error with
// errors=remount-ro: every call from then on fails naming the file, and
// after a remount the file opens whole with every ack kept.
func TestStore_ReadOnlyMidRun(t *testing.T) {
	dir, dev := mustExt4(t, 32<<20)
	path := filepath.Join(dir, "spyder.db")
	hosts := mustFaultDB(t, path)
	trigger := func() {
		if err := os.WriteFile("/sys/fs/ext4/"+dev+"/trigger_fs_error", []byte("spyder test\n"), 0o200); err != nil {
			t.Errorf("trigger_fs_error: %v", err)
		}
	}
	log := runFault(t, path, boltstore.Options{}, faultLoad{emit: true, spool: true, started: trigger})
	checkFaultReport(t, path, log, "read-only file system")
	if s, err := boltstore.Open(path, boltstore.Options{}); err == nil {
		s.Close()
		t.Errorf("Open() on the read-only file system = nil error, want one")
	} else if msg := err.Error(); strings.Count(msg, path) != 1 || !strings.Contains(msg, "read-only file system") {
		t.Errorf("Open() on the read-only file system: %q, want it to name %s once and say why", msg, path)
	}
	remount(t, dir)
	checkReopen(t, path, hosts, log)
}
