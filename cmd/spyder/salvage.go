package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/urfave/cli/v2"
	"github.com/urfave/cli/v2/altsrc"

	"github.com/spyder-crawler/spyder/store/boltstore"
)

// salvageCommand is `spyder queue salvage`: copy what a damaged bbolt file
// still holds into a new one.
func salvageCommand() *cli.Command {
	return withConfig(&cli.Command{
		Name:  "salvage",
		Usage: "copy every record a damaged --db file still holds into a new file (--to), and say what was lost",
		Description: "salvage reads --db without bbolt, going around every page it cannot read, and writes\n" +
			"every bucket and record it can read (pending, in flight, dead, seen, spool, emitted sets)\n" +
			"into --to, a new file. --db is only read. Then run spyder on --to.",
		Flags: []cli.Flag{
			altsrc.NewStringFlag(&cli.StringFlag{Name: "db", Value: "spyder.db", TakesFile: true,
				Usage: "the damaged bbolt `FILE`", EnvVars: []string{"SPYDER_DB"}}),
			&cli.StringFlag{Name: "to", TakesFile: true, Usage: "the new bbolt `FILE` to write; it must not exist"},
		},
		Action: queueSalvage,
	})
}

func queueSalvage(c *cli.Context) error {
	if c.NArg() > 0 {
		return usagef("queue salvage takes no arguments, got %q: name the files with --db and --to", c.Args().First())
	}
	from, to := c.String("db"), c.String("to")
	if from == "" || to == "" {
		return usagef("queue salvage needs --db (the damaged file) and --to (a new file to write)")
	}
	rep, err := boltstore.Salvage(from, to)
	if err != nil {
		return fmt.Errorf("salvage: %w", err)
	}
	w := c.App.Writer
	fmt.Fprintf(w, "salvaged %s into %s (from transaction %d)\n", from, to, rep.Txid)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "bucket\trecords\tcounted\tlost\tnested buckets")
	for _, b := range rep.Buckets {
		counted, lost, nested := "", "", ""
		if b.Counted >= 0 {
			counted, lost = fmt.Sprint(b.Counted), fmt.Sprint(max(b.Counted-int64(b.Records), 0))
		}
		if b.Nested > 0 {
			nested = fmt.Sprint(b.Nested)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", b.Name, b.Records, counted, lost, nested)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(rep.Lost) == 0 {
		fmt.Fprintln(w, "lost: nothing")
		return nil
	}
	fmt.Fprintf(w, "lost: %d unreadable part(s) of %s, whose records are not in %s:\n", len(rep.Lost), from, to)
	for _, l := range rep.Lost {
		fmt.Fprintf(w, "  %s\n", l)
	}
	return nil
}
