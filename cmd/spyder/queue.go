package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"
	"github.com/urfave/cli/v2/altsrc"

	"github.com/spyder-crawler/spyder/internal/errtext"
	"github.com/spyder-crawler/spyder/queue"
	"github.com/spyder-crawler/spyder/store"
)

// queueCommand is `spyder queue`: look at and manage the queue without
// crawling.
func queueCommand() *cli.Command {
	return &cli.Command{
		Name:  "queue",
		Usage: "inspect and manage the work queue (on --db or --redis)",
		Subcommands: []*cli.Command{
			withConfig(&cli.Command{
				Name:      "seed",
				Usage:     "add hosts to the queue, one per line, from files or stdin (-)",
				ArgsUsage: "[FILE|-]...",
				Flags:     backendFlags(),
				Action:    queueSeed,
			}),
			withConfig(&cli.Command{
				Name:   "stats",
				Usage:  "print pending, processing, dead and seen counts and the oldest lease age",
				Flags:  append(backendFlags(), &cli.BoolFlag{Name: "json", Usage: "print one JSON object"}),
				Action: withInspector(queueStats),
			}),
			withConfig(&cli.Command{
				Name:   "export",
				Usage:  "write every record of the queue to stdout as JSON lines (see `queue import`)",
				Flags:  backendFlags(),
				Action: withBackend(true, queueExport),
			}),
			withConfig(&cli.Command{
				Name:      "import",
				Usage:     "load an export file (or stdin) into an empty queue; a bad line changes nothing",
				ArgsUsage: "[FILE|-]",
				Flags:     backendFlags(),
				Action:    queueImport,
			}),
			withConfig(&cli.Command{
				Name:  "reclaim",
				Usage: "return expired leases to pending now (workers also do this on their own)",
				Flags: append(backendFlags(),
					altsrc.NewDurationFlag(&cli.DurationFlag{Name: "lease", Value: queue.DefaultLeaseTTL, EnvVars: []string{"SPYDER_LEASE"},
						Usage: "lease TTL, for items an older worker left without a lease record"}),
					altsrc.NewIntFlag(&cli.IntFlag{Name: "max-attempts", Value: queue.DefaultMaxAttempts, EnvVars: []string{"SPYDER_MAX_ATTEMPTS"},
						Usage: "an item reaching this many attempts goes to dead"}),
				),
				Action: checked(checkLeaseFlags, withBackend(true, queueReclaim)),
			}),
			salvageCommand(),
			retryCommand(),
			dropRunCommand(),
			{
				Name:  "dead",
				Usage: "list, retry or purge dead items",
				Subcommands: []*cli.Command{
					withConfig(&cli.Command{
						Name: "list", Usage: "print dead items, oldest first, with their last error",
						Flags: append(backendFlags(),
							&cli.IntFlag{Name: "limit", Value: 100, Usage: "print at most `N` items (0: all)"},
							&cli.BoolFlag{Name: "json", Usage: "print JSON lines"}),
						Action: checked(checkLimit, withInspector(queueDeadList)),
					}),
					withConfig(&cli.Command{
						Name: "retry", Usage: "move dead items back to pending with attempt 0",
						Flags:  append(backendFlags(), &cli.IntFlag{Name: "limit", Usage: "retry at most `N` items (0: all)"}),
						Action: checked(checkLimit, withInspector(queueDeadRetry)),
					}),
					withConfig(&cli.Command{
						Name: "purge", Usage: "delete every dead item for good (needs --yes)",
						Flags:  append(backendFlags(), &cli.BoolFlag{Name: "yes", Usage: "really delete"}),
						Action: queueDeadPurge,
					}),
				},
			},
		},
	}
}

// withBackend runs action on the store the flags name, opened before and
// closed after it (mustExist: see openBackend). A close that fails after a
// successful action is the command's error: the store may not have kept
// what the action wrote.
func withBackend(mustExist bool, action func(c *cli.Context, b store.Backend) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		b, err := openBackend(c.Context, c, mustExist)
		if err != nil {
			return err
		}
		defer b.Close()
		if err := action(c, b); err != nil {
			return err
		}
		return closeBackend(b)
	}
}

// checkArgs refuses flags given after the first file name, which the
// command line parser would otherwise take for file names.
func checkArgs(c *cli.Context) error {
	for _, a := range c.Args().Slice() {
		if strings.HasPrefix(a, "-") && a != "-" {
			return usagef("flag %s after a file name: put flags first (%s [flags] FILE...)", a, c.Command.HelpName)
		}
	}
	return nil
}

func queueSeed(c *cli.Context) error {
	if err := checkArgs(c); err != nil {
		return err
	}
	log, err := newLogger(c, c.App.ErrWriter)
	if err != nil {
		return err
	}
	files := c.Args().Slice()
	if len(files) == 0 {
		if isTerminal(os.Stdin) {
			return usagef("queue seed: name a file of hosts, or pipe them in: spyder queue seed list.txt")
		}
		files = []string{"-"}
	}
	// A file that cannot be seeded from stops the command before the
	// queue is opened, and before any other file is seeded.
	for _, f := range files {
		if err := queue.CheckFile(f); err != nil {
			return err
		}
	}
	return withNewBackend(func(c *cli.Context, b store.Backend) error {
		var total queue.SeedReport
		for _, f := range files {
			rep, err := queue.SeedFile(c.Context, b, f, os.Stdin, log)
			if err != nil {
				return err
			}
			total.Added += rep.Added
			total.Duplicate += rep.Duplicate
			total.Rejected += rep.Rejected
		}
		fmt.Fprintf(c.App.Writer, "added %d, duplicate %d, rejected %d (%s)\n", total.Added, total.Duplicate, total.Rejected, b.Name())
		return nil
	})(c)
}

func queueStats(c *cli.Context, b inspector) error {
	st, err := b.Stats(c.Context)
	if err != nil {
		return fmt.Errorf("%s: %w", b.Name(), err)
	}
	// The probe list is an extra: one the store cannot read is reported
	// and the counts are printed anyway.
	probes, perr := b.Probes(c.Context)
	if perr != nil {
		fmt.Fprintf(c.App.ErrWriter, "spyder: %s: probe list: %v\n", b.Name(), perr)
	}
	w := c.App.Writer
	if c.Bool("json") {
		return json.NewEncoder(w).Encode(map[string]any{
			"pending": st.Pending, "processing": st.Processing, "dead": st.Dead, "seen": st.Seen,
			"oldest_lease_age_seconds": st.OldestLeaseAge.Seconds(), "probes": probes,
		})
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "queue\t%s\n", b.Name())
	fmt.Fprintf(tw, "pending\t%d\n", st.Pending)
	fmt.Fprintf(tw, "processing\t%d\n", st.Processing)
	fmt.Fprintf(tw, "dead\t%d\n", st.Dead)
	fmt.Fprintf(tw, "seen\t%d\n", st.Seen)
	oldest := "-" // no lease held
	if st.Processing > 0 {
		oldest = st.OldestLeaseAge.Round(time.Second).String()
	}
	fmt.Fprintf(tw, "oldest lease\t%s\n", oldest)
	if err := tw.Flush(); err != nil {
		return err
	}
	return printProbes(w, probes)
}

// printProbes lists the probes alive (heard from within their heartbeat's
// TTL), with their rate and the age of their last heartbeat.
func printProbes(w io.Writer, probes []store.ProbeBeat) error {
	if len(probes) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nPROBE\tHOSTS/S\tDONE\tIN FLIGHT\tHELD\tSPOOLED\tLAST HEARTBEAT")
	for _, p := range probes {
		fmt.Fprintf(tw, "%s\t%.1f\t%d\t%d\t%d\t%d\t%s ago\n", p.ID, p.Rate, p.Done, p.Inflight, p.Held, p.Spooled, max(time.Since(p.At), 0).Round(time.Second))
	}
	return tw.Flush()
}

func queueExport(c *cli.Context, b store.Backend) error {
	if err := queue.Export(c.Context, b, c.App.Writer); err != nil {
		return fmt.Errorf("%s: %w", b.Name(), err)
	}
	return nil
}

func queueImport(c *cli.Context) error {
	if err := checkArgs(c); err != nil {
		return err
	}
	if c.NArg() > 1 {
		return usagef("queue import takes one file (or - for stdin), got %d", c.NArg())
	}
	var r io.Reader = os.Stdin
	name := "stdin"
	if p := c.Args().First(); p != "" && p != "-" {
		st, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("import file %s: %w", p, errtext.Path(err))
		}
		if st.IsDir() {
			return fmt.Errorf("import file %s is a directory", p)
		}
		f, err := os.Open(p)
		if err != nil {
			return fmt.Errorf("import file %s: %w", p, errtext.Path(err))
		}
		defer f.Close()
		r, name = f, p
	}
	// An import applies all or nothing, so one that fails leaves no queue
	// in the way of a retry.
	return withNewBackend(func(c *cli.Context, b store.Backend) error {
		n, err := queue.Import(c.Context, b, r)
		if errors.Is(err, queue.ErrNotEmpty) {
			return fmt.Errorf("import into %s: the queue already holds state; import needs an empty one (a new --db file or --queue-key)", b.Name())
		}
		if err != nil {
			return fmt.Errorf("import %s into %s: %w", name, b.Name(), err)
		}
		fmt.Fprintf(c.App.Writer, "imported %d records into %s\n", n, b.Name())
		return nil
	})(c)
}

// withNewBackend is withBackend for a command that fills the store (seed,
// import). When action fails and the store still holds nothing, a --db
// file the command created is removed again, so a failed command leaves
// no empty queue behind. The file is removed only if it still holds no
// state: never one another command created meanwhile and filled.
func withNewBackend(action func(c *cli.Context, b store.Backend) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		var created newFiles
		if strings.TrimSpace(c.String("redis")) == "" {
			created = missingFiles(c.String("db"))
		}
		empty := false
		err := withBackend(false, func(c *cli.Context, b store.Backend) error {
			err := action(c, b)
			if err != nil {
				st, serr := b.Stats(context.WithoutCancel(c.Context))
				empty = serr == nil && st.Pending+st.Processing+st.Dead+st.Seen == 0
			}
			return err
		})(c)
		if err != nil && empty {
			created.remove()
		}
		return err
	}
}

// checked runs check before action, so that a flag out of its bounds is a
// usage error before the queue is opened.
func checked(check, action cli.ActionFunc) cli.ActionFunc {
	return func(c *cli.Context) error {
		if err := check(c); err != nil {
			return err
		}
		return action(c)
	}
}

// checkLimit refuses a --limit below 0 (0 is no limit).
func checkLimit(c *cli.Context) error {
	if n := c.Int("limit"); n < 0 {
		return usagef("--limit %d: want 0 (all) or more", n)
	}
	return nil
}

func queueReclaim(c *cli.Context, b store.Backend) error {
	res, err := b.Reclaim(c.Context, c.Duration("lease"), c.Int("max-attempts"))
	if err != nil {
		return fmt.Errorf("%s: %w", b.Name(), err)
	}
	fmt.Fprintf(c.App.Writer, "requeued %d, dead %d\n", len(res.Requeued), len(res.Dead))
	for _, h := range res.Requeued {
		fmt.Fprintf(c.App.Writer, "requeued\t%s\n", h)
	}
	for _, h := range res.Dead {
		fmt.Fprintf(c.App.Writer, "dead\t%s\n", h)
	}
	return nil
}

func queueDeadList(c *cli.Context, b inspector) error {
	items, err := b.Dead(c.Context, c.Int("limit"))
	if err != nil {
		return fmt.Errorf("%s: %w", b.Name(), err)
	}
	w := c.App.Writer
	if c.Bool("json") {
		enc := json.NewEncoder(w)
		for _, d := range items {
			line := map[string]any{"raw": string(d.Raw), "error": d.Error, "at": d.At}
			if d.Item != nil {
				line["host"] = d.Item.Host
				line["attempt"] = d.Item.Attempt
			}
			if err := enc.Encode(line); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DIED\tHOST\tATTEMPTS\tERROR")
	for _, d := range items {
		host, attempts := fmt.Sprintf("(undecodable) %s", errtext.Clip(strings.ToValidUTF8(string(d.Raw), "?"), 40)), "-"
		if d.Item != nil {
			host, attempts = string(d.Item.Host), fmt.Sprint(d.Item.Attempt)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", time.Unix(d.At, 0).UTC().Format(time.RFC3339), host, attempts, d.Error)
	}
	return tw.Flush()
}

func queueDeadRetry(c *cli.Context, b inspector) error {
	n, err := b.RetryDead(c.Context, c.Int("limit"))
	if err != nil {
		return fmt.Errorf("%s: %w", b.Name(), err)
	}
	fmt.Fprintf(c.App.Writer, "moved %d dead items back to pending\n", n)
	return nil
}

func queueDeadPurge(c *cli.Context) error {
	if !c.Bool("yes") {
		return usagef("queue dead purge deletes every dead item for good; add --yes to do it")
	}
	return withBackend(true, func(c *cli.Context, b store.Backend) error {
		n, err := b.PurgeDead(c.Context)
		if err != nil {
			return fmt.Errorf("%s: %w", b.Name(), err)
		}
		fmt.Fprintf(c.App.Writer, "purged %d dead items\n", n)
		return nil
	})(c)
}
