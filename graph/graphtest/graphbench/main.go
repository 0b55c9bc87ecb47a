// Command graphbench measures `spyder graph` on synthetic crawls: it
// writes a crawl of -hosts hosts (and, for diff, a second one shifted by a
// tenth) into -dir, runs each command of the spyder binary on it, and
// prints a Markdown table of wall time and peak RSS per command:
//
//	make build && go run ./graph/graphtest/graphbench -spyder bin/spyder -hosts 1000000
//
// `make graph-bench` runs it for 1M hosts; HOSTS=10000000 for 10M.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spyder-crawler/spyder/graph/graphtest"
)

func main() {
	spyder := flag.String("spyder", "bin/spyder", "the spyder binary to measure")
	hosts := flag.Int("hosts", 1_000_000, "hosts in the synthetic crawl")
	dir := flag.String("dir", "", "where to write the crawls and outputs (default: a new temporary directory, removed after)")
	only := flag.String("only", "", "comma-separated commands to run (default: all): summary, csv, parquet, diff, view")
	flag.Int64Var(&maxRSS, "max-rss-mib", 0, "fail when a command's peak RSS passes this many MiB (0: no bound)")
	writeTo := flag.String("write", "", "only write a crawl to this file (the tool runs itself so to generate its input)")
	start := flag.Int("start", 0, "with -write, the number of the first host")
	flag.Parse()
	var err error
	if *writeTo != "" {
		err = write(*writeTo, graphtest.Options{Hosts: *hosts, Start: *start})
	} else {
		err = run(*spyder, *hosts, *dir, *only)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "graphbench:", err)
		os.Exit(1)
	}
}

// maxRSS is -max-rss-mib.
var maxRSS int64

func run(spyder string, hosts int, dir, only string) error {
	if dir == "" {
		d, err := os.MkdirTemp("", "spyder-graphbench-*")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	crawl, shifted := filepath.Join(dir, "crawl.jsonl"), filepath.Join(dir, "shifted.jsonl")
	cmds := []struct{ name, label string }{
		{"summary", "summary"}, {"csv", "export --format csv"}, {"parquet", "export --format parquet"},
		{"diff", "diff (against a crawl shifted by a tenth)"}, {"view", "view --host (depth 1)"},
	}
	want := func(name string) bool { return only == "" || strings.Contains(","+only+",", ","+name+",") }
	if err := generate(crawl, hosts, 0); err != nil {
		return err
	}
	if want("diff") {
		if err := generate(shifted, hosts, hosts/10); err != nil {
			return err
		}
	}
	st, _ := os.Stat(crawl)
	fmt.Printf("%d hosts, %.2f GB of batches\n\n| command | wall clock | CPU (user + sys) | peak RSS |\n| --- | --- | --- | --- |\n", hosts, float64(st.Size())/1e9)
	args := map[string][]string{
		"summary": {"graph", "summary", "--out", filepath.Join(dir, "summary.txt"), crawl},
		"csv":     {"graph", "export", "--format", "csv", "--out", filepath.Join(dir, "edges.csv"), crawl},
		"parquet": {"graph", "export", "--format", "parquet", "--out", filepath.Join(dir, "parquet"), crawl},
		"diff":    {"graph", "diff", crawl, shifted},
		"view":    {"graph", "view", "--host", graphtest.Host(3), "--depth", "1", "--out", filepath.Join(dir, "view.html"), crawl},
	}
	for _, c := range cmds {
		if !want(c.name) {
			continue
		}
		wall, user, sys, rss, err := measure(spyder, args[c.name])
		if err != nil {
			return fmt.Errorf("%s: %w", c.label, err)
		}
		fmt.Printf("| `%s` | %.1f s | %.1f + %.1f s | %d MiB |\n", c.label, wall.Seconds(), user.Seconds(), sys.Seconds(), rss>>20)
		if maxRSS > 0 && rss>>20 > maxRSS {
			return fmt.Errorf("%s: peak RSS %d MiB, over %d", c.label, rss>>20, maxRSS)
		}
	}
	return nil
}

// generate writes a crawl in a child process (this tool with -write): on
// Linux a child's peak RSS starts at its parent's RSS when it was forked,
// so the generator's memory must never be this process's, or it would be
// counted in every command's figure.
func generate(path string, hosts, start int) error {
	cmd := exec.Command(os.Args[0], "-write", path, "-hosts", fmt.Sprint(hosts), "-start", fmt.Sprint(start))
	cmd.Stderr = os.Stderr
	return cmd.Run()
}

// write writes a synthetic crawl to path.
func write(path string, o graphtest.Options) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if err := graphtest.Write(w, o); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// measure runs spyder with args, its output discarded, and returns its
// wall time, CPU times and peak resident set in bytes.
func measure(spyder string, args []string) (wall, user, sys time.Duration, rss int64, err error) {
	cmd := exec.Command(spyder, args...)
	cmd.Stderr = os.Stderr
	start := time.Now()
	err = cmd.Run()
	wall = time.Since(start)
	if err != nil {
		return
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return wall, time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano()), ru.Maxrss << 10, nil
}
