package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.etcd.io/bbolt"

	"github.com/spyder-crawler/spyder/crawl/crawltest"
	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
)

// TestApp_HostileQueue runs the queue commands and a crawl on a queue that
// holds what spyder never writes, in both backends: undecodable items in
// pending and in flight, broken dead entries, a garbage seen host. Every
// command works, export writes every record as a JSON line (the garbage as
// raw bytes) and imports back, the crawl probes every good host, and the
// garbage ends in dead with the reason.
func TestApp_HostileQueue(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"bolt", "redis"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			w := crawltest.Start(t, crawltest.Options{Hosts: 20, Seed: 41})
			var flags []string
			if backend == "bolt" {
				flags = []string{"--db", filepath.Join(t.TempDir(), "spyder.db")}
			} else {
				flags = []string{"--redis", redistest.Addr(t), "--queue-key", redistest.Prefix(t)}
			}
			q := func(args ...string) []string { return append(args, flags...) }
			runApp(t, append(q("queue", "seed"), mustDomains(t, w.Seeds))...)
			garbage := injectGarbage(t, backend, flags)

			st := mustStats(t, flags)
			if st.Seen != int64(len(w.Seeds))+1 || st.Pending+st.Processing+st.Dead != int64(len(w.Seeds))+garbage {
				t.Errorf("queue stats = %+v, want %d seen and %d items in all", st, len(w.Seeds)+1, len(w.Seeds)+int(garbage))
			}
			export := runApp(t, q("queue", "export")...)
			lines := strings.Split(strings.TrimSpace(export), "\n")
			if n := int64(len(lines)); n != st.Pending+st.Processing+st.Dead+st.Seen {
				t.Errorf("queue export wrote %d lines, stats count %+v", n, st)
			}
			for i, l := range lines {
				if !json.Valid([]byte(l)) {
					t.Errorf("export line %d is not JSON: %q", i+1, l)
				}
			}
			// Import validates hosts: the garbage seen host is refused with
			// its line, nothing applied; without it the rest imports.
			_, _, err := tryApp(ctx, "queue", "import", "--db", filepath.Join(t.TempDir(), "copy.db"), mustFile(t, "export.jsonl", []byte(export)))
			if err == nil || !strings.Contains(err.Error(), "not a host") || !strings.Contains(err.Error(), "1 bad line") {
				t.Errorf("queue import of the export = %v, want the garbage seen host refused with its line", err)
			}
			var keep []string
			for _, l := range lines {
				if !strings.Contains(l, "not a host") {
					keep = append(keep, l)
				}
			}
			imported := runApp(t, "queue", "import", "--db", filepath.Join(t.TempDir(), "copy.db"), mustFile(t, "export.jsonl", []byte(strings.Join(keep, "\n")+"\n")))
			if !strings.Contains(imported, "imported") {
				t.Errorf("queue import of the export = %q", imported)
			}
			runApp(t, q("queue", "dead", "list")...)
			runApp(t, q("queue", "dead", "list", "--json")...)

			// The crawl: the garbage goes to dead as it is met, every good
			// host is probed and written.
			out := filepath.Join(t.TempDir(), "out.jsonl")
			args := append(q("run", "--out", out, "--lease", "2s", "--exit-when-empty", "--concurrency", "8",
				"--state-dir", filepath.Join(t.TempDir(), "state")), worldArgs(t, w)...) // in-process: not the package's directory
			rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			defer cancel()
			if _, errOut, err := tryApp(rctx, args...); err != nil {
				t.Fatalf("spyder run on the hostile queue: %v\n%s", err, errOut)
			}
			checkWrittenOnce(t, w.Seeds, mustReadBatches(t, out).Probes, "")
			st = mustStats(t, flags)
			if st.Pending != 0 || st.Processing != 0 || st.Dead != garbage {
				t.Errorf("queue stats after the crawl = %+v, want only the %d garbage items, in dead", st, garbage)
			}
			dead := runApp(t, q("queue", "dead", "list", "--json", "--limit", "0")...)
			if n := strings.Count(dead, "\n"); int64(n) != garbage {
				t.Errorf("queue dead list --json printed %d lines, want %d:\n%s", n, garbage, dead)
			}
			for _, l := range strings.Split(strings.TrimSpace(dead), "\n") {
				var d struct{ Error string }
				if err := json.Unmarshal([]byte(l), &d); err != nil || d.Error == "" {
					t.Errorf("dead entry %q: want one with its reason", l)
				}
			}
			runApp(t, q("queue", "export")...)
		})
	}
}

func mustStats(t *testing.T, flags []string) queueStatsJSON {
	t.Helper()
	var st queueStatsJSON
	out := runApp(t, append([]string{"queue", "stats", "--json"}, flags...)...)
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("queue stats --json = %q: %v", out, err)
	}
	return st
}

// injectGarbage writes, as another program would, items and records
// spyder never writes into the queue the flags name, and returns how many
// items (pending, in flight or dead) it added.
func injectGarbage(t *testing.T, backend string, flags []string) int64 {
	t.Helper()
	ctx := t.Context()
	pending := [][]byte{[]byte("\xff\xfe random"), []byte(`{"host":"cut.example.com","ts`), []byte(`{"host":5}`), []byte(`[]`), []byte(`null`)}
	past := time.Now().Add(-time.Hour)
	if backend == "bolt" {
		db, err := bbolt.Open(flags[1], 0o600, &bbolt.Options{Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		err = db.Update(func(tx *bbolt.Tx) error {
			p := tx.Bucket([]byte("pending"))
			for _, v := range pending {
				seq, _ := p.NextSequence()
				if err := p.Put(binary.BigEndian.AppendUint64(nil, 1<<63+seq), v); err != nil {
					return err
				}
			}
			proc := binary.BigEndian.AppendUint64(nil, uint64(past.UnixNano()))
			proc = binary.BigEndian.AppendUint64(proc, uint64(past.UnixNano()))
			if err := tx.Bucket([]byte("processing")).Put([]byte("0000000000000fff"), append(proc, "not json"...)); err != nil {
				return err
			}
			if err := tx.Bucket([]byte("processing")).Put([]byte("short"), []byte("abc")); err != nil {
				return err
			}
			if err := tx.Bucket([]byte("dead")).Put([]byte("k"), []byte("xy")); err != nil {
				return err
			}
			return tx.Bucket([]byte("seen")).Put([]byte("\xff not a host"), nil)
		})
		if err != nil {
			t.Fatal(err)
		}
		return int64(len(pending)) + 3
	}
	c := redis.NewClient(&redis.Options{Addr: flags[1]})
	defer c.Close()
	base := flags[3]
	for _, v := range pending {
		if err := c.LPush(ctx, base, v).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.ZAdd(ctx, base+":leases", redis.Z{Score: float64(past.UnixMilli()), Member: "garbage-without-a-space"},
		redis.Z{Score: float64(past.UnixMilli()), Member: "1-1 not json"}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.LPush(ctx, base+":processing", "legacy garbage").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.RPush(ctx, base+":dead", "not a dead entry").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.HSet(ctx, base+":hosts#long", "\xff not a host", "q").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.HIncrBy(ctx, base+":hosts#meta", "n", 1).Err(); err != nil { // counted as spyder counts
		t.Fatal(err)
	}
	return int64(len(pending)) + 4
}
