package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/spyder-crawler/spyder/graph"
	"github.com/spyder-crawler/spyder/internal/errtext"
	"github.com/spyder-crawler/spyder/tables"
)

// graphCommand is `spyder graph`: read spyder's output files and summarise,
// export, diff or draw their graph.
func graphCommand() *cli.Command {
	out := &cli.StringFlag{Name: "out", Usage: "write to `FILE` instead of stdout", TakesFile: true}
	return &cli.Command{
		Name:  "graph",
		Usage: "summarise, export, diff or draw the graph in spyder output files (any --format: batch, edges, lines or hosts; plain or gzip)",
		Description: "Each subcommand reads the files named (or stdin, with - or no file) as a stream.\n" +
			"Bad lines are reported on stderr with their file and line, and skipped; a file with no\n" +
			"valid line of any format is refused in one line before anything is written, and the\n" +
			"command exits 1 when no valid line was read at all.",
		Before: func(*cli.Context) error {
			if os.Getenv("GOMEMLIMIT") == "" {
				debug.SetMemoryLimit(graphMemoryLimit)
			}
			return sortMemory()
		},
		Subcommands: []*cli.Command{
			{
				Name: "summary", Usage: "counts by type, hosts by outcome, the most shared infrastructure",
				ArgsUsage: "[FILE|-]...", OnUsageError: onUsageError,
				Flags: []cli.Flag{out,
					&cli.IntFlag{Name: "top", Value: 10, Usage: "list the top `N` of each ranking"},
					&cli.BoolFlag{Name: "json", Usage: "print one JSON object, for scripts"}},
				Action: graphSummary,
			},
			{
				Name: "export", Usage: "write the graph as GraphML, GEXF, DOT, CSV or Neo4j import files",
				ArgsUsage: "[FILE|-]...", OnUsageError: onUsageError,
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "format", Required: true, Usage: "`F`: " + strings.Join(graph.Formats, ", ")},
					&cli.StringFlag{Name: "out", TakesFile: true, Usage: "write to `PATH` instead of stdout (neo4j, parquet: the directory to fill, required)"},
					&cli.StringFlag{Name: "neo4j-database", Value: "neo4j", Usage: "database `NAME` in the printed neo4j-admin command"}},
				Action: graphExport,
			},
			{
				Name: "diff", Usage: "nodes and edges added and removed from OLD to NEW, as JSON lines",
				ArgsUsage: "OLD NEW  |  --old-run A --new-run B FILE...", OnUsageError: onUsageError,
				Flags: []cli.Flag{out,
					&cli.StringFlag{Name: "old-run", Usage: "compare run `ID` (the run_id) of the files with --new-run"},
					&cli.StringFlag{Name: "new-run", Usage: "the newer run `ID`"}},
				Action: graphDiff,
			},
			{
				Name: "view", Usage: "write one self-contained HTML page drawing the graph (needs no network)",
				ArgsUsage: "[FILE|-]...", OnUsageError: onUsageError,
				Flags: []cli.Flag{out,
					&cli.IntFlag{Name: "max-nodes", Value: 2000, Usage: "put at most `N` nodes in the page"},
					&cli.StringFlag{Name: "host", Usage: "draw the neighbourhood of `HOST` instead of the whole graph"},
					&cli.IntFlag{Name: "depth", Value: 2, Usage: "with --host, show `N` hops at first (one more is a click away)"}},
				Action: graphView,
			},
		},
	}
}

// graphMemoryLimit is the Go heap's soft limit for `spyder graph` unless
// GOMEMLIMIT says otherwise. What the commands hold does not grow with the
// input (a sort arena of graph.SortMemory, the chunks being decoded, a
// view's chosen part); the limit keeps the garbage collector from letting
// the heap grow to twice that on a machine short of memory.
const graphMemoryLimit = 512 << 20

// graphInput returns the reader and the input names: the arguments, or
// stdin when there are none. A named file that holds no spyder output is
// refused (checkInput), so commands check their flags first.
func graphInput(c *cli.Context) (*graph.Reader, []string, error) {
	if err := checkArgs(c); err != nil {
		return nil, nil, err
	}
	names := c.Args().Slice()
	if len(names) == 0 {
		if isTerminal(os.Stdin) {
			return nil, nil, usagef("%s: name spyder output files, or pipe one in", strings.TrimPrefix(c.Command.HelpName, c.App.Name+" "))
		}
		names = []string{"-"}
	}
	r := &graph.Reader{Warn: c.App.ErrWriter, Stdin: os.Stdin}
	return r, names, checkInput(r, names)
}

// checkInput refuses, before anything is written, a named file that holds
// no valid line of any spyder output format.
func checkInput(r *graph.Reader, names []string) error {
	if err := r.Check(names); err != nil {
		return err
	}
	return refusedInput(r)
}

// refusedInput returns the one-line error for the files r refused, or nil.
func refusedInput(r *graph.Reader) error {
	refused := slices.Sorted(maps.Keys(r.Problems.Refused))
	if len(refused) == 0 {
		return nil
	}
	more := ""
	if len(refused) > 1 {
		more = fmt.Sprintf(" (and %d more files)", len(refused)-1)
	}
	return fmt.Errorf("graph: %s is not spyder output (%s)%s; the graph tools read spyder's batch, edges, lines and hosts formats",
		refused[0], errtext.Clip(r.Problems.Refused[refused[0]], 100), more)
}

// finishRead reports the read's problems and fails when nothing valid was
// read from names, the inputs as given ("-" for stdin).
func finishRead(c *cli.Context, r *graph.Reader, names []string) error {
	r.Problems.Report(c.App.ErrWriter)
	if err := refusedInput(r); err != nil {
		return err
	}
	if r.Problems.Valid == 0 {
		shown := slices.Clone(names)
		if i := slices.Index(shown, "-"); i >= 0 {
			shown[i] = "stdin"
		}
		return fmt.Errorf("graph: no valid line of spyder output (batch, edges, lines or hosts) in %s", strings.Join(shown, ", "))
	}
	return nil
}

// withOutput runs write on --out (written to a temporary file renamed into
// place once complete, so a failure leaves no half file) or on stdout.
func withOutput(c *cli.Context, write func(io.Writer) error) error {
	path := c.String("out")
	if path == "" || path == "-" {
		return write(c.App.Writer)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("--out %s: %w", path, errors.Unwrap(err))
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("--out %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("--out %s: %w", path, err)
	}
	return os.Rename(tmp.Name(), path)
}

func graphSummary(c *cli.Context) error {
	if c.Int("top") < 0 {
		return usagef("--top %d: want 0 or more", c.Int("top"))
	}
	r, names, err := graphInput(c)
	if err != nil {
		return err
	}
	s, err := graph.Summarize(r, names, c.Int("top"))
	if err != nil {
		return err
	}
	if err := finishRead(c, r, names); err != nil {
		return err
	}
	return withOutput(c, func(w io.Writer) error {
		if c.Bool("json") {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(s)
		}
		return s.WriteText(w)
	})
}

func graphExport(c *cli.Context) error {
	format := c.String("format")
	if !slices.Contains(graph.Formats, format) {
		return usagef("--format %q: want one of %s", format, strings.Join(graph.Formats, ", "))
	}
	if format == "parquet" {
		return graphExportParquet(c)
	}
	r, names, err := graphInput(c)
	if err != nil {
		return err
	}
	if format == "neo4j" {
		dir := c.String("out")
		if dir == "" || dir == "-" {
			return usagef("--format neo4j writes several files: name a directory with --out DIR")
		}
		cmd, err := graph.ExportNeo4j(r, names, dir, c.String("neo4j-database"))
		if err != nil {
			return err
		}
		if err := finishRead(c, r, names); err != nil {
			return err
		}
		fmt.Fprintf(c.App.Writer, "wrote the Neo4j import files to %s; with Neo4j stopped, import them with:\n%s\n", dir, cmd)
		return nil
	}
	if err := withOutput(c, func(w io.Writer) error { return graph.Export(r, names, format, w) }); err != nil {
		return err
	}
	return finishRead(c, r, names)
}

func graphDiff(c *cli.Context) error {
	if err := checkArgs(c); err != nil {
		return err
	}
	args := c.Args().Slice()
	oldRun, newRun := c.String("old-run"), c.String("new-run")
	var old, new graph.Side
	switch {
	case (oldRun == "") != (newRun == ""):
		return usagef("graph diff: give both --old-run and --new-run, or neither")
	case oldRun != "" && len(args) > 0:
		old, new = graph.Side{Names: args, Run: oldRun}, graph.Side{Names: args, Run: newRun}
	case oldRun == "" && len(args) == 2:
		old, new = graph.Side{Names: args[:1]}, graph.Side{Names: args[1:]}
	default:
		return usagef("graph diff: want OLD NEW (two files), or --old-run A --new-run B FILE...")
	}
	r := &graph.Reader{Warn: c.App.ErrWriter, Stdin: os.Stdin}
	if err := checkInput(r, args); err != nil {
		return err
	}
	var counts graph.DiffCounts
	err := withOutput(c, func(w io.Writer) error {
		oldNames, cleanup, err := r.Spool(old.Names)
		if err != nil {
			return err
		}
		defer cleanup()
		old.Names = oldNames
		if new.Run != "" {
			new.Names = oldNames
		}
		if counts, err = graph.Diff(r, old, new, w); err != nil {
			return fmt.Errorf("graph diff: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := finishRead(c, r, args); err != nil {
		return err
	}
	fmt.Fprintf(c.App.ErrWriter, "spyder graph diff: %d added, %d removed\n", counts.Added, counts.Removed)
	return nil
}

func graphView(c *cli.Context) error {
	if n := c.Int("max-nodes"); n < 1 {
		return usagef("--max-nodes %d: want 1 or more", n)
	}
	if n := c.Int("depth"); n < 0 {
		return usagef("--depth %d: want 0 or more", n)
	}
	r, names, err := graphInput(c)
	if err != nil {
		return err
	}
	files, cleanup, err := r.Spool(names)
	if err != nil {
		return err
	}
	defer cleanup()
	opts := graph.ViewOptions{MaxNodes: c.Int("max-nodes"), Host: c.String("host"), Depth: c.Int("depth")}
	if err := withOutput(c, func(w io.Writer) error { return graph.View(r, files, opts, w) }); err != nil {
		return err
	}
	return finishRead(c, r, names)
}

// graphExportParquet writes the tables of `spyder run --format parquet`
// into the --out directory.
func graphExportParquet(c *cli.Context) error {
	dir := c.String("out")
	if dir == "" || dir == "-" {
		return usagef("--format parquet writes a directory of tables: name it with --out DIR")
	}
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return fmt.Errorf("--out %s is a file; --format parquet writes a directory of tables", dir)
	}
	r, names, err := graphInput(c)
	if err != nil {
		return err
	}
	files, err := graph.ExportParquet(r, names, dir, tables.Options{})
	if err != nil {
		return err
	}
	if err := finishRead(c, r, names); err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "wrote %d part files under %s (one per table: %s)\n", len(files), dir, strings.Join(tables.Names, ", "))
	return nil
}

// sortMemory sets graph.SortMemory from SPYDER_GRAPH_SORT_MEMORY (MiB),
// when set: less for a small machine, more for fewer temporary files.
func sortMemory() error {
	v := os.Getenv("SPYDER_GRAPH_SORT_MEMORY")
	if v == "" {
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 4096 {
		return usagef("SPYDER_GRAPH_SORT_MEMORY %q: want MiB, from 1 to 4096", v)
	}
	graph.SortMemory = n << 20
	return nil
}
