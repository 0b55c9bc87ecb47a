package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/spyder-crawler/spyder/store"
)

// dropRunCommand is `spyder queue drop-run RUN`: forget the output seen set
// of a finished run, the one part of the state that grows with every run.
func dropRunCommand() *cli.Command {
	return withConfig(&cli.Command{
		Name:      "drop-run",
		Usage:     "delete the output seen set of a finished --run (its nodes and edges are no longer deduplicated)",
		ArgsUsage: "RUN",
		Flags:     backendFlags(),
		Action:    withBackend(true, queueDropRun),
	})
}

func queueDropRun(c *cli.Context, b store.Backend) error {
	if c.NArg() != 1 || c.Args().First() == "" {
		return usagef("queue drop-run: name one run, e.g. spyder queue drop-run 2026-11-24")
	}
	run := c.Args().First()
	e, err := b.Emitted()
	if err != nil {
		return err
	}
	d, ok := e.(store.RunDropper)
	if !ok {
		return fmt.Errorf("queue drop-run: %s cannot drop a run's seen set", b.Name())
	}
	n, err := d.DropRun(c.Context, run)
	if err != nil {
		return err
	}
	if n == 0 {
		// Dropping is idempotent, so this is no error; but a mistyped run
		// must not read as done.
		_, err = fmt.Fprintf(c.App.Writer, "run %s has no output seen set in %s: nothing dropped\n", run, b.Name())
		return err
	}
	_, err = fmt.Fprintf(c.App.Writer, "dropped run %s: %d keys of its output seen set\n", run, n)
	return err
}
