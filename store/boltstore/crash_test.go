package boltstore_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/queue"
	"github.com/spyder-crawler/spyder/store/boltstore"
	"github.com/spyder-crawler/spyder/store/storetest"
)

// crashChildEnv names the file a child worker process opens; see
// TestStore_CrashChild.
const crashChildEnv = "SPYDER_BOLTSTORE_CRASH_DB"

const (
	crashHosts   = 1000
	crashWorkers = 8
	crashMaxN    = 3 // most items one worker leases at once
)

func crashHost(i int) host.Name { return host.Name(fmt.Sprintf("c%04d.com", i)) }

// TestStore_CrashChild is the worker the crash test kills: it leases and
// acks (hosts ending in 0 fail to dead, those ending in 5 fail back to
// pending) until SIGKILL,
// printing "ack HOST" after each Ack returns. It does nothing unless run by
// TestStore_ReopenAfterKill.
func TestStore_CrashChild(t *testing.T) {
	path := os.Getenv(crashChildEnv)
	if path == "" {
		t.Skip("run by TestStore_ReopenAfterKill")
	}
	s, err := boltstore.Open(path, boltstore.Options{Timeout: 10 * time.Second})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(2)
	}
	var mu sync.Mutex
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range crashWorkers {
		wg.Go(func() {
			for {
				ls, err := s.Lease(ctx, 1+w%crashMaxN, time.Hour, 100*time.Millisecond)
				if err != nil {
					fmt.Println("lease:", err)
					os.Exit(2)
				}
				for _, l := range ls {
					var i int
					fmt.Sscanf(string(l.Item.Host), "c%d.com", &i)
					if i%10 == 0 || i%10 == 5 {
						max := 1 // dead at once
						if i%10 == 5 {
							max = 3 // back to pending
						}
						if err := s.Fail(ctx, l, "boom", max); err != nil {
							fmt.Println("fail:", err)
							os.Exit(2)
						}
						continue
					}
					if err := storetest.Ack(ctx, s, l); err != nil {
						fmt.Println("ack:", err)
						os.Exit(2)
					}
					mu.Lock()
					fmt.Fprintf(os.Stdout, "ack %s\n", l.Item.Host)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
}

func TestStore_ReopenAfterKill(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crash.db")
	s, err := boltstore.Open(path, boltstore.Options{})
	if err != nil {
		t.Fatalf("Open() error: %v", err)
	}
	hosts := make([]host.Name, crashHosts)
	for i := range hosts {
		hosts[i] = crashHost(i)
	}
	if res, err := s.Seed(context.Background(), hosts); err != nil || res.Added != crashHosts {
		t.Fatalf("Seed() = %+v, %v", res, err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close() error: %v", err)
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestStore_CrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child: %v", err)
	}
	acked := map[string]bool{}
	var other []string
	sc := bufio.NewScanner(out)
	killed := false
	for sc.Scan() {
		line := sc.Text()
		if h, ok := strings.CutPrefix(line, "ack "); ok {
			if acked[h] {
				t.Errorf("child acked %s twice", h)
			}
			acked[h] = true
		} else {
			other = append(other, line)
		}
		if !killed && len(acked) >= 300 {
			if err := cmd.Process.Kill(); err != nil { // SIGKILL
				t.Fatalf("kill child: %v", err)
			}
			killed = true
		}
	}
	cmd.Wait()
	if !killed {
		t.Fatalf("child ended by itself after %d acks; output: %q", len(acked), other)
	}
	t.Logf("child acked %d items before SIGKILL", len(acked))

	// Reopen with a clock two hours on, past every lease.
	later := time.Now().Add(2 * time.Hour)
	s, err = boltstore.Open(path, boltstore.Options{Now: func() time.Time { return later }})
	if err != nil {
		t.Fatalf("reopen after SIGKILL: %v", err)
	}
	defer s.Close()
	where := map[host.Name][]string{}
	seen := 0
	err = s.Dump(context.Background(), func(r queue.Record) error {
		switch {
		case r.Kind == queue.KindSeen:
			seen++
		case r.Item != nil:
			where[r.Item.Host] = append(where[r.Item.Host], r.Kind)
		default:
			t.Errorf("undecodable %s record %q", r.Kind, r.Raw)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Dump() error: %v", err)
	}
	if seen != crashHosts {
		t.Errorf("seen = %d, want %d", seen, crashHosts)
	}
	counts := map[string]int{}
	gone := 0
	for _, h := range hosts {
		in := where[h]
		switch {
		case len(in) > 1:
			t.Errorf("%s is in %v, want exactly one collection", h, in)
		case len(in) == 1 && acked[string(h)]:
			t.Errorf("%s was acked but is %s", h, in[0])
		case len(in) == 1:
			counts[in[0]]++
			var i int
			fmt.Sscanf(string(h), "c%d.com", &i)
			if in[0] == queue.KindDead && i%10 != 0 {
				t.Errorf("%s is dead but never failed to dead", h)
			}
		default:
			gone++
		}
	}
	// An ack can be committed and the child killed before it printed it.
	if unreported := gone - len(acked); unreported < 0 || unreported > crashWorkers*crashMaxN {
		t.Errorf("%d items gone, %d reported acked: want at most %d committed acks unreported",
			gone, len(acked), crashWorkers*crashMaxN)
	}
	if counts[queue.KindProcessing] > crashWorkers*crashMaxN {
		t.Errorf("%d items processing, want at most %d (in flight at the kill)", counts[queue.KindProcessing], crashWorkers*crashMaxN)
	}
	t.Logf("after reopen: %d gone, %v", gone, counts)
	st, err := s.Stats(context.Background())
	if err != nil {
		t.Fatalf("Stats() error: %v", err)
	}
	if got, want := [4]int64{st.Pending, st.Processing, st.Dead, st.Seen},
		[4]int64{int64(counts[queue.KindPending]), int64(counts[queue.KindProcessing]), int64(counts[queue.KindDead]), crashHosts}; got != want {
		t.Errorf("Stats() after reopen = %v, want %v as dumped", got, want)
	}

	// The reopened file carries on: expired leases come back, the rest drains.
	if _, err := s.Reclaim(context.Background(), queue.DefaultLeaseTTL, 100); err != nil {
		t.Fatalf("Reclaim() error: %v", err)
	}
	for {
		ls, err := s.Lease(context.Background(), 100, time.Hour, 0)
		if err != nil {
			t.Fatalf("Lease() error: %v", err)
		}
		if len(ls) == 0 {
			break
		}
		for _, l := range ls {
			if err := storetest.Ack(context.Background(), s, l); err != nil {
				t.Fatalf("Ack() error: %v", err)
			}
		}
	}
	st, err = s.Stats(context.Background())
	if err != nil {
		t.Fatalf("Stats() error: %v", err)
	}
	if st.Pending != 0 || st.Processing != 0 || st.Dead != int64(counts[queue.KindDead]) {
		t.Errorf("Stats() after draining = %+v, want nothing pending or processing, %d dead", st, counts[queue.KindDead])
	}
}
