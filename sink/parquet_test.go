package sink_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spyder-crawler/spyder"
	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/internal/duckdbtest"
	"github.com/spyder-crawler/spyder/sink"
	"github.com/spyder-crawler/spyder/tables"
	"github.com/spyder-crawler/spyder/tables/tablestest"
)

// variedBatch is batch i of a crawl: nodes with and without TXT records,
// AS data and SANs, edges of several types, outcomes with details and
// resolver counts, so every column holds values and nulls.
func variedBatch(i int) *spyder.Batch {
	h := func(k int) host.Name { return host.Name(fmt.Sprintf("h%d-%d.example", i, k)) }
	b := &spyder.Batch{ProbeID: "probe-" + fmt.Sprint(i%2), RunID: "run-1", BatchID: fmt.Sprintf("b%03d", i), Timestamp: 1705312200 + int64(i)}
	for k := range 3 {
		d := spyder.DomainNode{Host: h(k), Apex: h(k), FirstSeen: int64(100 + k), LastSeen: int64(200 + k)}
		if k == 1 {
			d.TXT = []string{"v=spf1 -all", fmt.Sprintf("t%d", i)}
		}
		b.NodesDomain = append(b.NodesDomain, d)
		ip := spyder.IPNode{IP: fmt.Sprintf("192.0.%d.%d", i, k), FirstSeen: 5, LastSeen: 6}
		if k == 2 {
			ip.ASN, ip.ASOrg, ip.Prefix = 64500+uint32(i), "Org "+fmt.Sprint(i), "192.0.0.0/16"
		}
		b.NodesIP = append(b.NodesIP, ip)
		b.Edges = append(b.Edges,
			spyder.Edge{Type: spyder.ResolvesTo, Source: string(h(k)), Target: ip.IP, ObservedAt: 7, ProbeID: b.ProbeID, RunID: "run-1"},
			spyder.Edge{Type: spyder.LinksTo, Source: string(h(k)), Target: "shared.example", ObservedAt: 8, ProbeID: b.ProbeID, RunID: "run-1"})
		steps := []spyder.StepOutcome{{Step: spyder.StepDNS, Status: spyder.StatusOK}}
		if k == 0 {
			steps[0] = spyder.StepOutcome{Step: spyder.StepDNS, Status: spyder.StatusPartial, Detail: "one resolver timed out",
				Resolvers: []spyder.ResolverCounts{{Server: "192.0.2.53:53", Answers: 3, Timeouts: 1}, {Server: "192.0.2.54:53", Refused: 2}}}
		}
		steps = append(steps, spyder.StepOutcome{Step: spyder.StepTLS, Status: spyder.StatusOK},
			spyder.StepOutcome{Step: spyder.StepPage, Status: []string{"ok", "http_503", "connect_error"}[k], Detail: map[bool]string{true: "refused"}[k == 2]})
		b.Outcomes = append(b.Outcomes, spyder.HostOutcome{Host: h(k), Steps: steps})
	}
	b.NodesCert = []spyder.CertNode{{SPKISHA256: fmt.Sprintf("%064x", i), SubjectCN: string(h(0)), IssuerCN: "R3",
		NotBefore: 1700000000, NotAfter: 1800000000, SANs: []string{string(h(0)), "www." + string(h(0))}, Verified: i%2 == 0}}
	return b
}

// writeBoth writes n varied batches to a lines file and to Parquet in
// dir/pq through one Tee, as a run with both would, and closes both.
func writeBoth(t *testing.T, dir string, n int, cfg sink.ParquetConfig) (lines string, p *sink.Parquet) {
	t.Helper()
	lines = filepath.Join(dir, "out.jsonl")
	js, closeJS, err := sink.OpenFile(lines, sink.FormatLines, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	p, err = sink.OpenParquet(filepath.Join(dir, "pq"), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	tee := sink.Tee{js, p}
	for i := range n {
		if err := tee.WriteBatch(t.Context(), variedBatch(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := closeJS(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	return lines, p
}

// TestParquet_AgreesWithJSON writes one crawl's batches as lines and as
// Parquet, and DuckDB finds every table's rows the same in both, row for
// row: as many, and none in one that is not in the other.
func TestParquet_AgreesWithJSON(t *testing.T) {
	dir := t.TempDir()
	lines, _ := writeBoth(t, dir, 12, sink.ParquetConfig{ProbeID: "p", RunID: "r", RollRows: 50})
	tablestest.CheckAgree(t, lines, filepath.Join(dir, "pq"))
}

// TestParquet_Schema: DuckDB sees typed columns: timestamps, lists,
// booleans, unsigned AS numbers and nested steps.
func TestParquet_Schema(t *testing.T) {
	dir := t.TempDir()
	writeBoth(t, dir, 2, sink.ParquetConfig{ProbeID: "p", RunID: "r"})
	rows := duckdbtest.Query(t, fmt.Sprintf(`SELECT column_name || ' ' || column_type AS c FROM (DESCRIBE SELECT d.first_seen, d.txt, c.verified, i.asn, p.steps FROM read_parquet('%[1]s/domains/*.parquet') d, read_parquet('%[1]s/certs/*.parquet') c, read_parquet('%[1]s/ips/*.parquet') i, read_parquet('%[1]s/probes/*.parquet') p LIMIT 0)`, filepath.Join(dir, "pq")))
	var got []string
	for _, r := range rows {
		got = append(got, r["c"].(string))
	}
	want := "first_seen TIMESTAMP WITH TIME ZONE|txt VARCHAR[]|verified BOOLEAN|asn UINTEGER|steps STRUCT(step VARCHAR, status VARCHAR, detail VARCHAR, resolvers STRUCT(\"server\" VARCHAR, answers UBIGINT, timeouts UBIGINT, errors UBIGINT, servfail UBIGINT, refused UBIGINT, truncated UBIGINT)[])[]"
	if g := strings.Join(got, "|"); g != want {
		t.Errorf("columns:\n got %s\nwant %s", g, want)
	}
}

// TestParquet_Rolls: a journal rolls into a part at RollRows rows and at
// RollEvery age, each part a file in every table's folder, and nothing but
// complete parts is left once the sink is closed.
func TestParquet_Rolls(t *testing.T) {
	dir := t.TempDir()
	now := time.Unix(1705312200, 0)
	cfg := sink.ParquetConfig{ProbeID: "probe/1", RunID: "r", RollRows: 60, RollEvery: time.Minute, Now: func() time.Time { return now }}
	p, err := sink.OpenParquet(dir, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 { // 16 rows a batch: the fourth reaches 60
		if err := p.WriteBatch(t.Context(), variedBatch(i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(p.Written()); n != 5 {
		t.Fatalf("after 64 rows: %d part files, want 5 (one per table)", n)
	}
	p.WriteBatch(t.Context(), variedBatch(4))
	now = now.Add(2 * time.Minute)
	p.WriteBatch(t.Context(), variedBatch(5)) // the journal is now older than a minute
	if n := len(p.Written()); n != 10 {
		t.Fatalf("after a minute: %d part files, want 10", n)
	}
	p.WriteBatch(t.Context(), variedBatch(6))
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	files := p.Written()
	if len(files) != 15 {
		t.Fatalf("after Close: %d part files, want 15", len(files))
	}
	for _, f := range files {
		if b := filepath.Base(f); !strings.HasPrefix(b, "probe-1_r_20240115T09") || !strings.HasSuffix(b, "-000000.parquet") {
			t.Errorf("part %s: want probe-1_r_<time>_<random>-000000.parquet", b)
		}
	}
	if left := hidden(t, dir); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	if n := duckdbtest.Count(t, fmt.Sprintf(`SELECT count(*) FROM read_parquet('%s/probes/*.parquet')`, dir)); n != 21 {
		t.Errorf("probes rows: %d, want 21", n)
	}
}

// hidden lists the temporary and journal files under dir.
func hidden(t *testing.T, dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasPrefix(d.Name(), ".") || strings.HasSuffix(d.Name(), ".jsonl")) {
			out = append(out, path)
		}
		return nil
	})
	return out
}

// TestParquet_CrashHelper is the process TestParquet_KilledRunResumes
// kills: it writes batches to the directory it is given, cuts a last
// batch short in the journal, as a write interrupted by SIGKILL does,
// and is killed before it closes the sink.
func TestParquet_CrashHelper(t *testing.T) {
	dir := os.Getenv("SPYDER_PARQUET_CRASH_DIR")
	if dir == "" {
		t.Skip("run by TestParquet_KilledRunResumes")
	}
	p, err := sink.OpenParquet(dir, sink.ParquetConfig{ProbeID: "p", RunID: "r"}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := p.WriteBatch(t.Context(), variedBatch(i)); err != nil {
			t.Fatal(err)
		}
	}
	journals, _ := filepath.Glob(filepath.Join(dir, sink.JournalDir, "*.jsonl"))
	f, err := os.OpenFile(journals[0], os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"probe_id":"p","run_id":"r","batch_id":"cut","nodes_domain":[{"ho`)
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
}

// TestParquet_KilledRunResumes: a run killed mid-write leaves no part file
// an engine could trip on, only its journal; the next run converts the
// journal's whole batches (not the cut one) and adds its own parts beside.
func TestParquet_KilledRunResumes(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestParquet_CrashHelper$")
	cmd.Env = append(os.Environ(), "SPYDER_PARQUET_CRASH_DIR="+dir)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("helper: %v (want killed)\n%s", err, out)
	}
	if parts, _ := filepath.Glob(filepath.Join(dir, "*", "*.parquet")); len(parts) != 0 {
		t.Fatalf("parts before conversion: %v", parts)
	}
	var logs strings.Builder
	p, err := sink.OpenParquet(dir, sink.ParquetConfig{ProbeID: "p", RunID: "r"}, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "parquet_journal_partial") {
		t.Errorf("the cut batch was not reported:\n%s", logs.String())
	}
	if err := p.WriteBatch(t.Context(), variedBatch(5)); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tab := range tables.Names {
		if parts, _ := filepath.Glob(filepath.Join(dir, tab, "*.parquet")); len(parts) != 2 {
			t.Errorf("%s: %d parts, want the killed run's and this run's", tab, len(parts))
		}
	}
	if left := hidden(t, dir); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	got := duckdbtest.Query(t, fmt.Sprintf(`SELECT count(*) AS n, count(DISTINCT batch_id) AS b, count(*) FILTER (batch_id = 'cut') AS cut FROM read_parquet('%s/domains/*.parquet')`, dir))[0]
	if n, b, cut := duckdbtest.Int(t, got["n"]), duckdbtest.Int(t, got["b"]), duckdbtest.Int(t, got["cut"]); n != 18 || b != 6 || cut != 0 {
		t.Errorf("domains: %d rows of %d batches (%d of the cut one); want 18 of 6, none cut", n, b, cut)
	}
}

// TestParquet_LiveJournalIsLeftAlone: a probe opening a directory another
// live probe writes to does not convert that probe's journal.
func TestParquet_LiveJournalIsLeftAlone(t *testing.T) {
	dir := t.TempDir()
	log := slog.New(slog.DiscardHandler)
	a, err := sink.OpenParquet(dir, sink.ParquetConfig{ProbeID: "a", RunID: "r"}, log)
	if err != nil {
		t.Fatal(err)
	}
	a.WriteBatch(t.Context(), variedBatch(0))
	b, err := sink.OpenParquet(dir, sink.ParquetConfig{ProbeID: "b", RunID: "r"}, log)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(b.Written()); n != 0 {
		t.Errorf("probe b converted %d files of probe a's live journal", n)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("probe a's close: %v", err)
	}
	if n := len(a.Written()); n != 5 {
		t.Errorf("probe a wrote %d part files, want 5", n)
	}
	b.Close()
}

// unlockedJournals lists the journals under dir that a probe could lock,
// that is which no live writer holds.
func unlockedJournals(t *testing.T, dir string) []string {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, sink.JournalDir, "*.jsonl"))
	var out []string
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			out = append(out, path)
		}
		f.Close()
	}
	return out
}

// TestParquet_NewJournalIsNeverTakenByRecovery: another probe opening the
// directory while this one creates its journal, at the point between
// creating the file and locking it, neither sees an unlocked journal nor
// converts and removes the new one, so the batch written to it reaches a
// part. (Were the journal created under its .jsonl name and locked after,
// the other probe would convert it empty and remove it, and the batch
// would be synced into an unlinked file and lost.)
func TestParquet_NewJournalIsNeverTakenByRecovery(t *testing.T) {
	dir := t.TempDir()
	log := slog.New(slog.DiscardHandler)
	a, err := sink.OpenParquet(dir, sink.ParquetConfig{ProbeID: "a", RunID: "r"}, log)
	if err != nil {
		t.Fatal(err)
	}
	var other *sink.Parquet
	sink.SetJournalCreated(t, func() {
		if open := unlockedJournals(t, dir); len(open) > 0 {
			t.Errorf("while a journal is created: unlocked %v", open)
		}
		if other, err = sink.OpenParquet(dir, sink.ParquetConfig{ProbeID: "b", RunID: "r"}, log); err != nil {
			t.Errorf("the other probe's open: %v", err)
		}
	})
	if err := a.WriteBatch(t.Context(), variedBatch(0)); err != nil {
		t.Fatal(err)
	}
	if other == nil {
		t.Fatal("the other probe did not open the directory while the journal was created")
	}
	if n := len(other.Written()); n != 0 {
		t.Errorf("the other probe converted %d part files of the new journal", n)
	}
	if open := unlockedJournals(t, dir); len(open) > 0 {
		t.Errorf("after the write: unlocked %v", open)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	other.Close()
	if n := duckdbtest.Count(t, fmt.Sprintf(`SELECT count(*) FROM read_parquet('%s/domains/*.parquet')`, dir)); n != 3 {
		t.Errorf("domains rows: %d, want the batch's 3", n)
	}
	if left := hidden(t, dir); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestParquet_JournalConvertedMeanwhileIsDone: a left journal that another
// probe converts and removes between this probe's opening it and locking
// it counts as converted: this probe neither converts it again nor fails
// to open the directory, and its batch is in the parts once.
func TestParquet_JournalConvertedMeanwhileIsDone(t *testing.T) {
	dir := t.TempDir()
	log := slog.New(slog.DiscardHandler)
	if err := os.MkdirAll(filepath.Join(dir, sink.JournalDir), 0o755); err != nil {
		t.Fatal(err)
	}
	line, err := json.Marshal(variedBatch(0))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, sink.JournalDir, "old_r_x.jsonl"), append(line, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	var other *sink.Parquet
	sink.SetJournalOpened(t, func() {
		sink.SetJournalOpened(t, nil)
		if other, err = sink.OpenParquet(dir, sink.ParquetConfig{ProbeID: "b", RunID: "r"}, log); err != nil {
			t.Errorf("the other probe's open: %v", err)
		}
	})
	p, err := sink.OpenParquet(dir, sink.ParquetConfig{ProbeID: "a", RunID: "r"}, log)
	if err != nil {
		t.Fatal(err)
	}
	if other == nil {
		t.Fatal("the other probe did not open the directory during recovery")
	}
	if n, m := len(p.Written()), len(other.Written()); n != 0 || m != 5 {
		t.Errorf("part files: %d by this probe, %d by the other; want 0 and 5", n, m)
	}
	p.Close()
	other.Close()
	if n := duckdbtest.Count(t, fmt.Sprintf(`SELECT count(*) FROM read_parquet('%s/domains/*.parquet')`, dir)); n != 3 {
		t.Errorf("domains rows: %d, want the batch's 3", n)
	}
	if left := hidden(t, dir); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}
