package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder/crawl/crawltest"
	"github.com/spyder-crawler/spyder/store/redisstore/redistest"
)

// runBin runs the built binary in dir with stdin (nil: /dev/null) and no
// SPYDER_ variables, and returns its stdout, stderr and exit status.
func runBin(t *testing.T, dir string, stdin io.Reader, args ...string) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(mustBinary(t), args...)
	cmd.Dir, cmd.Stdin, cmd.Stdout, cmd.Stderr = dir, stdin, &stdout, &stderr
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SPYDER_") && !strings.HasPrefix(kv, "REDIS_QUEUE_ADDR=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return stdout.String(), stderr.String(), 0
	case errors.As(err, &exit):
		return stdout.String(), stderr.String(), exit.ExitCode()
	}
	t.Fatalf("spyder %v: %v", args, err)
	return "", "", 0
}

// exitStatus is the exit status of a process that ended with err (0 for
// nil, -1 when it did not exit on its own).
func exitStatus(err error) int {
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.ExitCode()
	}
	return -1
}

// domainHosts returns the hosts of the domain nodes of batch output.
func domainHosts(t *testing.T, stdout string) []string {
	t.Helper()
	out := output{}
	out.add(t, []byte(stdout), "stdout")
	var hs []string
	for _, d := range out.Domains {
		hs = append(hs, string(d.Host))
	}
	return hs
}

// TestRun_NothingToCrawl: the README's first command run twice (`spyder
// run --domains=list.txt > graph.jsonl`) crawls the list, then says in one
// line that every host is done and how to crawl them again, and exits 1
// instead of writing nothing behind an exit 0 (one host piped twice is
// "it", not "them"); a mistyped --db with no
// --domains says its queue holds no hosts, exits 1 and leaves no file.
func TestRun_NothingToCrawl(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	list := mustDomains(t, []string{"a.example.com", "b.example.com"})
	args := []string{"run", "--domains=" + list, "--fake-probe", "--log-level=error"}
	stdout, stderr, code := runBin(t, dir, nil, args...)
	if code != 0 || len(domainHosts(t, stdout)) != 2 {
		t.Fatalf("first run: exit %d, %d domain nodes; want 0 and 2\n%s", code, len(domainHosts(t, stdout)), stderr)
	}
	stdout, stderr, code = runBin(t, dir, nil, args...)
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	last := lines[len(lines)-1]
	if code != 1 || stdout != "" {
		t.Errorf("second run: exit %d, stdout %q; want 1 and nothing", code, stdout)
	}
	for _, want := range []string{"nothing to crawl", "2 hosts of " + list, "all done in spyder.db", "--revisit", "--db"} {
		if !strings.Contains(last, want) {
			t.Errorf("second run's last line %q, want it to say %q", last, want)
		}
	}

	// One host, piped twice: the second run says "it", not "them".
	one := []string{"run", "--db=one.db", "--fake-probe", "--log-level=error"}
	if _, stderr, code := runBin(t, dir, strings.NewReader("c.example.com\n"), one...); code != 0 {
		t.Fatalf("first run of one host from stdin: exit %d\n%s", code, stderr)
	}
	_, stderr, code = runBin(t, dir, strings.NewReader("c.example.com\n"), one...)
	lines = strings.Split(strings.TrimSpace(stderr), "\n")
	last = lines[len(lines)-1]
	if want := "the one host of stdin is done in one.db; crawl it again with --revisit"; code != 1 || !strings.Contains(last, want) {
		t.Errorf("second run of one host from stdin: exit %d, last line %q; want 1 and %q", code, last, want)
	}

	_, stderr, code = runBin(t, dir, nil, "run", "--db=typo.db", "--fake-probe", "--log-level=error")
	if want := "spyder: nothing to crawl: typo.db holds no hosts"; code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("run --db=typo.db: exit %d, stderr %q; want 1 and %q", code, stderr, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "typo.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("run --db=typo.db left typo.db behind (%v)", err)
	}
}

// TestRun_HostsFromPipedStdin: with no --domains, hosts piped to stdin are
// crawled (and rank,domain lines give their host column), after a log
// line saying stdin is read; with stdin /dev/null, nothing is read and the
// empty queue is said.
func TestRun_HostsFromPipedStdin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	stdin := strings.NewReader("a.example.com\n2,b.example.com\n")
	stdout, stderr, code := runBin(t, dir, stdin, "run", "--fake-probe", "--log-level=info")
	if got := domainHosts(t, stdout); code != 0 || len(got) != 2 {
		t.Fatalf("cat list | spyder run: exit %d, domain nodes %v; want 0 and a.example.com, b.example.com\n%s", code, got, stderr)
	}
	if seeded := logLines(stderr, "seeded"); len(seeded) != 1 || seeded[0]["file"] != "-" || seeded[0]["added"] != 2.0 {
		t.Errorf("seeded log lines %v, want one from stdin (-) with added=2", seeded)
	}
	if reading := logLines(stderr, "reading_stdin"); len(reading) != 1 || strings.Index(stderr, `"reading_stdin"`) > strings.Index(stderr, `"seeded"`) {
		t.Errorf("reading_stdin log lines %v, want one before the seeded line, saying why the run waits on stdin\n%s", reading, stderr)
	}
	_, stderr, code = runBin(t, t.TempDir(), nil, "run", "--fake-probe", "--log-level=error")
	if code != 1 || !strings.Contains(stderr, "holds no hosts") {
		t.Errorf("spyder run < /dev/null on a new queue: exit %d, stderr %q; want 1, holds no hosts", code, stderr)
	}
}

// TestRun_FleetProbeIgnoresStdin: a fleet probe (--redis) whose stdin is a
// pipe that never ends, as under a supervisor or ssh, does not read it: it
// crawls the queue's host and exits (--exit-when-empty) rather than wait on
// stdin for ever, and the host on the pipe is not queued. Given --domains -
// it does read stdin.
func TestRun_FleetProbeIgnoresStdin(t *testing.T) {
	t.Parallel()
	backend := []string{"--redis", redistest.Addr(t), "--queue-key", redistest.Prefix(t)}
	runApp(t, append([]string{"queue", "seed"}, append(backend, mustDomains(t, []string{"a.example.com"}))...)...)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close() // open until the probe is done: stdin never ends
	if _, err := io.WriteString(pw, "b.example.com\n"); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out.jsonl")
	cmd := exec.Command(mustBinary(t), append([]string{"run", "--exit-when-empty", "--fake-probe", "--out", out, "--log-level=info"}, backend...)...)
	cmd.Stdin = pr
	p := startProc(t, cmd)
	if err := p.wait(t, 60*time.Second); err != nil {
		t.Fatalf("fleet probe with an open pipe for stdin: %v\n%s", err, p.log())
	}
	var got []string
	for _, d := range mustReadBatches(t, out).Domains {
		got = append(got, string(d.Host))
	}
	if !slices.Equal(got, []string{"a.example.com"}) {
		t.Errorf("fleet probe wrote domain nodes %v, want only the queue's a.example.com (stdin is not read)", got)
	}
	if n := len(logLines(p.log(), "reading_stdin")); n != 0 {
		t.Errorf("fleet probe logged reading_stdin %d times, want none\n%s", n, p.log())
	}

	// Pointed at stdin with --domains -, a fleet probe reads it.
	stdout, stderr, code := runBin(t, t.TempDir(), strings.NewReader("c.example.com\n"),
		append([]string{"run", "--exit-when-empty", "--fake-probe", "--domains", "-", "--log-level=error"}, backend...)...)
	if got := domainHosts(t, stdout); code != 0 || !slices.Equal(got, []string{"c.example.com"}) {
		t.Errorf("fleet probe with --domains -: exit %d, domain nodes %v; want 0 and c.example.com\n%s", code, got, stderr)
	}
}

// TestRun_RevisitWritesNodes: `run --revisit` without --run writes the
// revisited hosts' nodes again, not only their edges, under a run ID of
// its own.
func TestRun_RevisitWritesNodes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	list := mustDomains(t, []string{"a.example.com", "b.example.com"})
	if _, stderr, code := runBin(t, dir, nil, "run", "--domains", list, "--fake-probe", "--log-level=error"); code != 0 {
		t.Fatalf("first run: exit %d\n%s", code, stderr)
	}
	time.Sleep(2100 * time.Millisecond) // probe times are whole seconds
	stdout, stderr, code := runBin(t, dir, nil, "run", "--revisit", "1s", "--fake-probe", "--log-level=error")
	if got := domainHosts(t, stdout); code != 0 || len(got) != 2 {
		t.Errorf("run --revisit 1s: exit %d, domain nodes %v; want 0 and both hosts'\n%s", code, got, stderr)
	}
	if !strings.Contains(stdout, `"run_id":"revisit-`) {
		t.Errorf("run --revisit wrote %.200q, want run_id revisit-…", stdout)
	}
}

// TestRun_ExitStatus: finished 0, error 1, usage 2, and Ctrl-C with hosts
// left 130; `spyder --help` and `spyder run --help` list them.
func TestRun_ExitStatus(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	list := mustDomains(t, []string{"a.example.com", "b.example.com", "c.example.com"})
	if _, stderr, code := runBin(t, dir, nil, "run", "--domains", list, "--db", "done.db", "--fake-probe"); code != 0 {
		t.Errorf("a finished run exits %d, want 0\n%s", code, stderr)
	}
	if _, _, code := runBin(t, dir, nil, "run", "--domains", "missing.txt"); code != 1 {
		t.Errorf("run --domains missing.txt exits %d, want 1", code)
	}
	if _, _, code := runBin(t, dir, nil, "run", "--concurrency", "0"); code != 2 {
		t.Errorf("run --concurrency 0 exits %d, want 2", code)
	}
	for _, args := range [][]string{{"--help"}, {"run", "--help"}} {
		if out, _, _ := runBin(t, dir, nil, args...); !strings.Contains(out, "130 interrupted") {
			t.Errorf("spyder %v does not list exit status 130:\n%s", args, out)
		}
	}

	p := startSpyder(t, "run", "--domains", list, "--db", filepath.Join(dir, "slow.db"), "--fake-probe",
		"--fake-probe-delay", "1h", "--grace", "0s")
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(p.log(), `"seeded"`) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	p.cmd.Process.Signal(syscall.SIGINT)
	err := p.wait(t, 30*time.Second)
	if exitStatus(err) != 130 || !strings.Contains(p.log(), "spyder: interrupted with 3 hosts left") {
		t.Errorf("Ctrl-C with 3 hosts left: %v, want exit status 130 and a line saying so\n%s", err, p.log())
	}
}

// TestApp_FlagHabits: a mistyped command or flag gets a "did you mean",
// a flag after a file name is taken as if it came first, and `spyder
// version` prints the version.
func TestApp_FlagHabits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	list := mustDomains(t, []string{"a.example.com"})
	if _, stderr, code := runBin(t, dir, nil, "run", "--domains", list, "--out", "g.jsonl", "--fake-probe"); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	tests := []struct {
		args   []string
		code   int
		stdout string // wanted in stdout
		stderr string // wanted in stderr
	}{
		{[]string{"rn"}, 2, "", `unknown command "rn" (did you mean "run"?)`},
		{[]string{"graph", "sumary", "g.jsonl"}, 2, "", `(did you mean "summary"?)`},
		{[]string{"run", "--concurency", "3"}, 2, "", "unknown flag --concurency (did you mean --concurrency?)"},
		{[]string{"graph", "export", "g.jsonl", "--format", "dot"}, 0, "digraph", ""},
		{[]string{"graph", "summary", "g.jsonl", "--top=3", "--json"}, 0, `"nodes"`, ""},
		{[]string{"version"}, 0, "spyder version ", ""},
	}
	for _, tt := range tests {
		stdout, stderr, code := runBin(t, dir, nil, tt.args...)
		if code != tt.code || !strings.Contains(stdout, tt.stdout) || !strings.Contains(stderr, tt.stderr) {
			t.Errorf("spyder %v: exit %d, stdout %.80q, stderr %q; want %d, %q, %q",
				tt.args, code, stdout, stderr, tt.code, tt.stdout, tt.stderr)
		}
	}
}

// TestRun_MaxRateAndResolverFile: `--resolver FILE` takes the servers the
// file lists (both are asked; the second answers SERVFAIL, so the dns step
// names them), and `--max-rate N` keeps the HTTP requests
// to all hosts together within the token bucket's bound: in any span d
// between two requests, at most N plus N·d of them (and a little jitter).
func TestRun_MaxRateAndResolverFile(t *testing.T) {
	t.Parallel()
	const perSecond = 40
	w := crawltest.Start(t, crawltest.Options{Hosts: 45, Seed: 5})
	second := w.StartResolver(t, "127.0.0.1")
	second.SetMode(crawltest.DNSServFail) // so the dns step lists the servers asked
	dir := t.TempDir()
	file := mustFile(t, "resolvers.txt", []byte("# the world's\n"+w.Resolver+"\n\n"+second.Addr+"  # a second\n"))
	args := append([]string{"run", "--db", filepath.Join(dir, "spyder.db"), "--domains", mustDomains(t, w.Seeds),
		"--out", filepath.Join(dir, "out.jsonl"), "--max-rate", strconv.Itoa(perSecond)}, worldArgs(t, w)...)
	args = append(args, "--resolver", file)
	if err := startSpyder(t, args...).wait(t, 90*time.Second); err != nil {
		t.Fatalf("spyder run --max-rate: %v", err)
	}
	asked := map[string]bool{}
	for _, p := range mustReadBatches(t, filepath.Join(dir, "out.jsonl")).Probes {
		for _, s := range p.Steps {
			for _, r := range s.Resolvers {
				asked[r.Server] = true
			}
		}
	}
	if !asked[w.Resolver] || !asked[second.Addr] || len(asked) != 2 {
		t.Errorf("resolvers asked: %v; want the two of %s", asked, file)
	}
	reqs := w.Requests()
	if len(reqs) < 2*perSecond {
		t.Fatalf("the world saw %d HTTP requests, want at least %d to judge the rate", len(reqs), 2*perSecond)
	}
	if slices.ContainsFunc(reqs, func(r crawltest.Request) bool { return r.Time.IsZero() }) {
		t.Fatal("a request without its time")
	}
	slices.SortFunc(reqs, func(a, b crawltest.Request) int { return a.Time.Compare(b.Time) })
	// The server's clock sees a request a little after the limiter let it
	// go (the request is written on a connection already open): a quarter
	// second of that jitter is allowed.
	const slack = perSecond / 4
	for i := range reqs {
		for j := i + 1; j < len(reqs); j++ {
			d := reqs[j].Time.Sub(reqs[i].Time).Seconds()
			if n := j - i + 1; float64(n) > perSecond+perSecond*d+slack {
				t.Fatalf("%d HTTP requests within %.3fs under --max-rate %d: over the bound", n, d, perSecond)
			}
		}
	}
}
