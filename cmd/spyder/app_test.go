package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder"

	"github.com/google/go-cmp/cmp"

	"github.com/spyder-crawler/spyder/store/boltstore"
)

// runApp runs the app in-process and returns its stdout; it fails the test
// on error.
func runApp(tb testing.TB, args ...string) string {
	tb.Helper()
	out, errOut, err := tryApp(tb.Context(), args...)
	if err != nil {
		tb.Fatalf("spyder %v: %v\nstderr:\n%s", args, err, errOut)
	}
	return out
}

// appMu serialises in-process runs: urfave/cli v2 keeps its help and
// version flags in package variables that every run writes.
var appMu sync.Mutex

// tryApp runs the app in-process and returns stdout, stderr and its error.
func tryApp(ctx context.Context, args ...string) (string, string, error) {
	appMu.Lock()
	defer appMu.Unlock()
	var out, errOut bytes.Buffer
	err := newApp(&out, &errOut).RunContext(ctx, append([]string{"spyder"}, args...))
	return out.String(), errOut.String(), err
}

// mustSeededDB returns a bbolt file holding a small crawl state, and its
// export, so a test can check that a failed command changed nothing.
func mustSeededDB(tb testing.TB) (path, export string) {
	tb.Helper()
	path = filepath.Join(tb.TempDir(), "spyder.db")
	runApp(tb, "queue", "seed", "--db", path, mustDomains(tb, []string{"a.example.com", "b.example.com"}))
	return path, runApp(tb, "queue", "export", "--db", path)
}

func mustFile(tb testing.TB, name string, data []byte) string {
	tb.Helper()
	p := filepath.Join(tb.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		tb.Fatal(err)
	}
	return p
}

// TestApp_BadDomainsFile feeds `spyder run` domains files it must refuse:
// each gets one line naming the file and what is wrong, a non-zero exit,
// and the crawl state is left as it was. A file that cannot be read or is
// binary is refused before the run starts (no start line is logged).
func TestApp_BadDomainsFile(t *testing.T) {
	t.Parallel()
	garbage := make([]byte, 4096)
	for i := range garbage {
		garbage[i] = byte(i * 7)
	}
	dir := t.TempDir()
	type test struct {
		name, path, want string
		early            bool // refused before the start line
	}
	tests := []test{
		{"Missing", filepath.Join(dir, "nope.txt"), "nope.txt: no such file or directory", true},
		{"Directory", dir, "is a directory", true},
		{"Empty", mustFile(t, "empty.txt", nil), "empty.txt holds no hosts", false},
		{"CommentsOnly", mustFile(t, "comments.txt", []byte("# nothing\n\n   \n")), "holds no hosts", false},
		{"Binary", mustFile(t, "garbage.bin", garbage), "garbage.bin looks binary", true},
		{"NoValidHost", mustFile(t, "ips.txt", []byte("1.2.3.4\nlocalhost\n")), "ips.txt: none of its 2 host lines is a valid host", false},
	}
	if os.Getuid() != 0 { // root reads anything
		p := mustFile(t, "secret.txt", []byte("a.com\n"))
		os.Chmod(p, 0)
		tests = append(tests, test{"Unreadable", p, "secret.txt: permission denied", true})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			db, before := mustSeededDB(t)
			_, stderr, err := tryApp(t.Context(), "run", "--db", db, "--domains", tt.path, "--resolver", "127.0.0.1:1")
			if err == nil {
				t.Fatalf("run --domains %s = nil error, want one naming the file", tt.path)
			}
			if msg := err.Error(); !strings.Contains(msg, tt.want) || strings.Contains(msg, "\n") {
				t.Errorf("error = %q, want one line containing %q", msg, tt.want)
			}
			if exitCode(err) == 0 {
				t.Errorf("exitCode(%v) = 0, want non-zero", err)
			}
			if started := strings.Contains(stderr, `"msg":"start"`); started == tt.early {
				t.Errorf("start logged = %v, want %v; stderr:\n%s", started, !tt.early, stderr)
			}
			if after := runApp(t, "queue", "export", "--db", db); after != before {
				t.Errorf("queue state changed by a refused run:\nbefore %s\nafter %s\nstderr %s", before, after, stderr)
			}
		})
	}
}

// TestApp_SeedMessyFile seeds a file with CRLF endings, a byte order mark,
// URLs, an IDN, an IP, blank lines, comments and a 10 MB line: the good
// hosts are stored normalised, the bad lines are logged with their line
// numbers, and the command succeeds.
func TestApp_SeedMessyFile(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	b.WriteString("\ufeffExample.COM.\r\n")               // 1: BOM, CRLF, case, trailing dot
	b.WriteString("https://www.example.org/path?q=1\r\n") // 2: URL
	b.WriteString("# a comment\r\n\r\n")                  // 3, 4
	b.WriteString("bücher.de\n")                          // 5: IDN
	b.WriteString("192.0.2.1\n")                          // 6: IP: rejected
	b.WriteString(strings.Repeat("x", 10<<20) + ".com\n") // 7: 10 MB line: rejected
	b.WriteString("example.com\n")                        // 8: duplicate
	b.WriteString("last.example.net")                     // 9: no final newline
	path := mustFile(t, "messy.txt", b.Bytes())
	db := filepath.Join(t.TempDir(), "spyder.db")
	out, stderr, err := tryApp(t.Context(), "queue", "seed", "--db", db, path)
	if err != nil {
		t.Fatalf("queue seed: %v\n%s", err, stderr)
	}
	if want := "added 4, duplicate 1, rejected 2"; !strings.Contains(out, want) {
		t.Errorf("queue seed printed %q, want %q", out, want)
	}
	var rejected []string
	for _, l := range logLines(stderr, "domain_rejected") {
		rejected = append(rejected, fmt.Sprintf("%v: %v", l["line"], l["reason"]))
	}
	slices.Sort(rejected)
	want := []string{"6: IP address, not a host name", "7: line longer than 4096 bytes"}
	if diff := cmp.Diff(want, rejected); diff != "" {
		t.Errorf("rejected lines (-want +got):\n%s", diff)
	}
	var hosts []string
	for _, l := range strings.Split(runApp(t, "queue", "export", "--db", db), "\n") {
		if h, ok := strings.CutPrefix(l, `{"kind":"seen","host":"`); ok {
			hosts = append(hosts, strings.TrimSuffix(h, `"}`))
		}
	}
	slices.Sort(hosts)
	wantHosts := []string{"example.com", "last.example.net", "www.example.org", "xn--bcher-kva.de"}
	if diff := cmp.Diff(wantHosts, hosts); diff != "" {
		t.Errorf("seen hosts (-want +got):\n%s", diff)
	}
}

// TestApp_BadBackend checks the one-line errors for a queue that cannot be
// opened (a Redis that does not answer, a bbolt file another spyder holds,
// a file that is not bbolt (left untouched), a directory) and for flag
// values out of their bounds or that do not parse, given before the queue
// is opened (the cases on the locked file would otherwise say it is
// locked).
func TestApp_BadBackend(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()

	locked, _ := mustSeededDB(t)
	s, err := boltstore.Open(locked, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() }) // after the parallel subtests
	text := []byte("this is not a database\n")
	notBolt := mustFile(t, "notes.db", text)

	// run gives a flag case its own --db, so that a check that failed to
	// refuse the flag would not leave a spyder.db in the package directory.
	run := func(args ...string) []string {
		return append([]string{"run", "--db", filepath.Join(t.TempDir(), "x.db")}, args...)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"RedisSilent", []string{"queue", "stats", "--redis", closed}, "redis " + closed + " does not answer"},
		{"RedisURLPassword", []string{"queue", "stats", "--redis", "redis://u:secret@" + closed + "/0"}, "redis redis://u:xxxxx@" + closed + "/0 does not answer"},
		{"RedisBadAddr", []string{"queue", "stats", "--redis", "host:notaport"}, `redis address "host:notaport"`},
		{"Locked", []string{"queue", "stats", "--db", locked}, locked + " is locked by another process"},
		{"NotBolt", []string{"run", "--db", notBolt, "--domains", mustDomains(t, []string{"a.com"})}, notBolt + " is not a bbolt database"},
		{"Directory", []string{"queue", "stats", "--db", t.TempDir()}, "is a directory, not a bbolt file"},
		{"CAFileMissing", run("--ca-file", "/nonexistent/ca.pem"), "--ca-file /nonexistent/ca.pem: no such file"},
		{"CAFileNotPEM", run("--ca-file", notBolt), "holds no PEM certificate"},
		{"BadFormat", run("--format", "xml"), `--format "xml": want batch, edges, lines, hosts or parquet`},
		{"BadMemoryLimit", run("--memory-limit", "lots"), `--memory-limit "lots": want a size such as 2GiB`},
		{"ParquetNeedsDir", run("--format", "parquet"), `--format parquet writes a directory of tables: name it with --out DIR`},
		{"ParquetOutIsFile", run("--format", "parquet", "--out", notBolt), notBolt + " is a file; --format parquet writes a directory of tables"},
		{"BadResolver", run("--resolver", "192.0.2.1:53,dns.example"), `--resolver: resolver "dns.example": want IP`},
		{"BadResolverPort", run("--resolver", "[::1]:99999"), `--resolver: resolver "[::1]:99999": port "99999"`},
		{"ResolverFileMissing", run("--resolver", "/nonexistent/resolvers.txt"), "--resolver: resolver file /nonexistent/resolvers.txt could not be read: no such file or directory"},
		{"BadIngest", run("--ingest", "ftp://x"), `--ingest "ftp://x": want an http:// or https:// URL`},
		{"ZeroConcurrency", run("--concurrency", "0"), "--concurrency 0: want at least 1"},
		{"NegativeRate", run("--rate", "-1"), "--rate -1: want 0 (no limit) or more"},
		{"ZeroBurst", run("--burst", "0"), "--burst 0: want at least 1"},
		{"NegativeMaxDomains", run("--max-domains", "-1"), "--max-domains -1: want 0 or more"},
		{"NegativeIngestRetries", run("--ingest-retries", "-2"), "--ingest-retries -2: want 0 or more"},
		{"ZeroHostTimeout", run("--host-timeout", "0s"), "--host-timeout 0s: want more than 0"},
		{"NegativeIngestTimeout", run("--ingest-timeout", "-1s"), "--ingest-timeout -1s: want more than 0"},
		{"NegativeGrace", run("--grace", "-5s"), "--grace -5s: want 0"},
		{"MissingForStats", []string{"queue", "stats", "--db", filepath.Join(t.TempDir(), "none.db")}, "none.db does not exist"},
		{"NegativeLimit", []string{"queue", "dead", "list", "--db", locked, "--limit", "-1"}, "--limit -1: want 0 (all) or more"},
		{"ZeroLeaseForReclaim", []string{"queue", "reclaim", "--db", locked, "--lease", "0s"}, "--lease 0s: want at least 1s"},
		{"ZeroMaxAttemptsForReclaim", []string{"queue", "reclaim", "--db", locked, "--max-attempts", "0"}, "--max-attempts 0: want at least 1"},
		{"ZeroLease", run("--lease", "500ms"), "--lease 500ms: want at least 1s"},
		{"MetricsAddrPort", run("--metrics-addr", "127.0.0.1:99999"), `--metrics-addr "127.0.0.1:99999": want HOST:PORT or :PORT, with a port from 0 to 65535`},
		{"MetricsAddrNoPort", run("--metrics-addr", "localhost"), `--metrics-addr "localhost": want HOST:PORT`},
		{"NotAWholeNumber", run("--concurrency", "lots"), `--concurrency "lots": want a whole number (see spyder run --help)`},
		{"NotANumber", run("--rate", "fast"), `--rate "fast": want a number (see spyder run --help)`},
		{"DurationWithoutUnit", run("--host-timeout", "30"), `--host-timeout "30": want a duration such as 30s or 2m (see spyder run --help)`},
		{"NotABool", []string{"queue", "retry", "--db", locked, "--dead=2"}, `--dead "2": want true or false (see spyder queue retry --help)`},
		{"ZeroMaxNodes", []string{"graph", "view", "--max-nodes", "0", notBolt}, "--max-nodes 0: want 1 or more"},
		{"NegativeDepth", []string{"graph", "view", "--depth", "-1", notBolt}, "--depth -1: want 0 or more"},
		{"NegativeTop", []string{"graph", "summary", "--top", "-1", notBolt}, "--top -1: want 0 or more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := tryApp(t.Context(), tt.args...)
			if err == nil {
				t.Fatalf("spyder %v = nil error, want %q", tt.args, tt.want)
			}
			if msg := err.Error(); !strings.Contains(msg, tt.want) || strings.Contains(msg, "\n") {
				t.Errorf("spyder %v error = %q, want one line containing %q", tt.args, msg, tt.want)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("error %q shows the Redis password", err)
			}
		})
	}
	if got, _ := os.ReadFile(notBolt); !bytes.Equal(got, text) {
		t.Errorf("a non-bbolt --db file was changed to %q", got)
	}
}

// TestApp_ConfigAndEnv checks that flags also come from the environment
// and from --config, the command line winning.
func TestApp_ConfigAndEnv(t *testing.T) {
	db, _ := mustSeededDB(t)
	cfg := mustFile(t, "spyder.yaml", []byte("db: "+db+"\n"))
	if out := runApp(t, "queue", "stats", "--config", cfg); !strings.Contains(out, "seen          2") {
		t.Errorf("stats with db from --config = %q, want seen 2", out)
	}
	t.Setenv("SPYDER_DB", db)
	if out := runApp(t, "queue", "stats"); !strings.Contains(out, db) {
		t.Errorf("stats with SPYDER_DB = %q, want it to name %s", out, db)
	}
	elsewhere := mustFile(t, "elsewhere.yaml", []byte("db: "+filepath.Join(t.TempDir(), "none.db")+"\n"))
	if out := runApp(t, "queue", "stats", "--config", elsewhere); !strings.Contains(out, db) {
		t.Errorf("stats with SPYDER_DB and another db in --config = %q, want the environment's %s", out, db)
	}
	other := filepath.Join(t.TempDir(), "none.db")
	if _, _, err := tryApp(t.Context(), "queue", "stats", "--db", other); err == nil || !strings.Contains(err.Error(), other) {
		t.Errorf("--db on the command line did not win over SPYDER_DB: %v", err)
	}
	if _, _, err := tryApp(t.Context(), "queue", "stats", "--config", filepath.Join(t.TempDir(), "nope.yaml")); err == nil || !strings.Contains(err.Error(), "config file") {
		t.Errorf("missing --config file: error %v, want one naming it", err)
	}
	if _, _, err := tryApp(t.Context(), "frobnicate"); err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), `unknown command "frobnicate"`) {
		t.Errorf("unknown command: %v, want a usage error naming it", err)
	}
	for _, group := range [][]string{{"queue"}, {"queue", "dead"}, {"graph"}} {
		args := append(slices.Clone(group), "frobnicate")
		want := fmt.Sprintf(`unknown command "frobnicate" (see spyder %s --help)`, strings.Join(group, " "))
		if _, _, err := tryApp(t.Context(), args...); err == nil || exitCode(err) != 2 || err.Error() != want {
			t.Errorf("spyder %v: %v, want a usage error %q", args, err, want)
		}
		name := "spyder " + strings.Join(group, " ")
		args = append(slices.Clone(group), "--db", "x.db", "stats")
		want = fmt.Sprintf("flag provided but not defined: -db (%s takes no flags of its own: give them after one of its commands, see %[1]s --help)", name)
		if _, _, err := tryApp(t.Context(), args...); err == nil || exitCode(err) != 2 || err.Error() != want {
			t.Errorf("spyder %v: %v, want a usage error %q", args, err, want)
		}
		if out := runApp(t, group...); !strings.Contains(out, "COMMANDS:") {
			t.Errorf("spyder %v printed %q, want the group's help", group, out)
		}
	}
	if out := runApp(t); !strings.Contains(out, "queue") || !strings.Contains(out, "run") {
		t.Errorf("spyder with no command printed %q, want the help", out)
	}
	if out := runApp(t, "--version"); !strings.Contains(out, spyder.Version) {
		t.Errorf("--version printed %q, want %s", out, spyder.Version)
	}
}

// TestApp_QueueCommands drives seed, stats, dead list/retry/purge, reclaim
// and import errors in-process on a bbolt file.
func TestApp_QueueCommands(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := filepath.Join(t.TempDir(), "spyder.db")
	runApp(t, "queue", "seed", "--db", db, mustDomains(t, []string{"a.example.com", "b.example.com", "c.example.com"}))
	s, err := boltstore.Open(db, boltstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ls, err := s.Lease(ctx, 2, time.Minute, 0)
	if err != nil || len(ls) != 2 {
		t.Fatalf("Lease = %v, %v", ls, err)
	}
	if err := s.Fail(ctx, ls[0], "boom", 1); err != nil {
		t.Fatal(err)
	}
	s.Close()

	if out := runApp(t, "queue", "stats", "--db", db, "--json"); !strings.Contains(out, `"dead":1`) || !strings.Contains(out, `"processing":1`) {
		t.Errorf("stats = %s, want 1 dead and 1 processing", out)
	}
	if out := runApp(t, "queue", "stats", "--db", db); !regexp.MustCompile(`(?m)^oldest lease +[0-9]+s$`).MatchString(out) {
		t.Errorf("stats = %q, want the age of the lease held", out)
	}
	idle := filepath.Join(t.TempDir(), "idle.db")
	runApp(t, "queue", "seed", "--db", idle, mustDomains(t, []string{"d.example.com"}))
	if out := runApp(t, "queue", "stats", "--db", idle); !regexp.MustCompile(`(?m)^oldest lease +-$`).MatchString(out) {
		t.Errorf("stats = %q, want no lease age when none is held", out)
	}
	if out := runApp(t, "queue", "dead", "list", "--db", db); !strings.Contains(out, "a.example.com") || !strings.Contains(out, "boom") {
		t.Errorf("dead list = %q, want a.example.com with its error", out)
	}
	if _, _, err := tryApp(ctx, "queue", "dead", "purge", "--db", db); err == nil || exitCode(err) != 2 {
		t.Errorf("dead purge without --yes = %v, want a usage error", err)
	}
	if out := runApp(t, "queue", "dead", "retry", "--db", db); !strings.Contains(out, "moved 1") {
		t.Errorf("dead retry = %q, want moved 1", out)
	}
	if out := runApp(t, "queue", "reclaim", "--db", db, "--lease", "1m"); !strings.Contains(out, "requeued 0") {
		t.Errorf("reclaim of a live lease = %q, want requeued 0", out)
	}
	bad := mustFile(t, "bad.jsonl", []byte("{\"kind\":\"pending\",\"item\":{\"host\":\"x.com\",\"ts\":1,\"attempt\":0}}\nnot json\n"))
	_, _, err = tryApp(ctx, "queue", "import", "--db", filepath.Join(t.TempDir(), "new.db"), bad)
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("import of a bad file = %v, want an error naming line 2", err)
	}
	if _, _, err := tryApp(ctx, "queue", "import", "--db", db, bad); err == nil || !strings.Contains(err.Error(), "already holds state") {
		t.Errorf("import into a used queue = %v, want it refused", err)
	}
	if _, _, err := tryApp(ctx, "queue", "seed", mustDomains(t, []string{"a.com"}), "--db", db); err == nil || exitCode(err) != 2 {
		t.Errorf("flags after the file = %v, want a usage error", err)
	}
}

// TestApp_FailedWriteLeavesNoNewDB: `queue seed` of a file it cannot seed
// from and `queue import` of a file with a bad line fail without leaving
// behind the new --db they were given, so the same command run again with
// the file fixed starts from nothing; seeding a second file that is missing
// is refused before the first is seeded.
func TestApp_FailedWriteLeavesNoNewDB(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := mustDomains(t, []string{"a.example.com"})
	bad := mustFile(t, "bad.jsonl", []byte("{\"kind\":\"pending\",\"item\":{\"host\":\"x.com\",\"ts\":1,\"attempt\":0}}\nnot json\n"))
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"SeedMissing", []string{"queue", "seed", "--db", filepath.Join(dir, "missing.db"), filepath.Join(dir, "nope.txt")}, "nope.txt: no such file"},
		{"SeedBinary", []string{"queue", "seed", "--db", filepath.Join(dir, "binary.db"), mustFile(t, "bin.txt", []byte("a.com\n\x00"))}, "looks binary"},
		{"SeedSecondMissing", []string{"queue", "seed", "--db", filepath.Join(dir, "second.db"), good, filepath.Join(dir, "nope.txt")}, "nope.txt: no such file"},
		{"SeedNoHosts", []string{"queue", "seed", "--db", filepath.Join(dir, "nohosts.db"), mustFile(t, "blank.txt", []byte("\n# none\n"))}, "holds no hosts"},
		{"ImportBadLine", []string{"queue", "import", "--db", filepath.Join(dir, "import.db"), bad}, "line 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := tryApp(t.Context(), tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("%v = %v, want an error containing %q", tt.args, err, tt.want)
			}
			if _, err := os.Stat(tt.args[3]); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s after the failed command: %v, want no such file", tt.args[3], err)
			}
		})
	}
	// A failed import into a file that was there keeps the file and its
	// state.
	db, before := mustSeededDB(t)
	os.Remove(db)
	runApp(t, "queue", "import", "--db", db, mustFile(t, "export.jsonl", []byte(before)))
	if _, _, err := tryApp(t.Context(), "queue", "import", "--db", db, bad); err == nil {
		t.Fatal("import into a used queue = nil error")
	}
	if after := runApp(t, "queue", "export", "--db", db); after != before {
		t.Errorf("state after a refused import:\n%s\nwant\n%s", after, before)
	}
}

// TestApp_BadEnvValue checks that a flag's environment variable holding a
// value that does not parse is a usage error naming the variable, the
// value and what the flag wants.
func TestApp_BadEnvValue(t *testing.T) {
	t.Setenv("SPYDER_RATE", "fast")
	_, _, err := tryApp(t.Context(), "run", "--db", filepath.Join(t.TempDir(), "x.db"))
	want := `SPYDER_RATE "fast": want a number (see spyder run --help)`
	if err == nil || exitCode(err) != 2 || err.Error() != want {
		t.Errorf("run with SPYDER_RATE=fast: %v, want %q", err, want)
	}
}

// TestApp_RetryOutcomeWords checks that `queue retry --outcome` warns of
// a word no probe ends with, naming the nearest one, and takes the words
// and patterns probes do end with in silence.
func TestApp_RetryOutcomeWords(t *testing.T) {
	db, _ := mustSeededDB(t)
	_, errOut, err := tryApp(t.Context(), "queue", "retry", "--db", db, "--outcome", "timout")
	want := `spyder: warning: --outcome "timout" is no outcome spyder's probes end with (did you mean "timeout"?)` + "\n"
	if err != nil || errOut != want {
		t.Errorf("retry --outcome timout: stderr %q, error %v; want %q", errOut, err, want)
	}
	_, errOut, err = tryApp(t.Context(), "queue", "retry", "--db", db, "--outcome", "timeout,servfail,partial,http_404,http_5xx,transient")
	if err != nil || errOut != "" {
		t.Errorf("retry with outcomes probes end with: stderr %q, error %v; want neither", errOut, err)
	}
	if _, _, err := tryApp(t.Context(), "queue", "retry", "--db", db, "--outcome", ","); err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), "name at least one outcome") {
		t.Errorf("retry --outcome ,: %v, want a usage error", err)
	}
}
