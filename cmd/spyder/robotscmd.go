package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/spyder-crawler/spyder/robots"
)

// robotsCommand is `spyder robots`: whether a robots.txt file lets a user
// agent fetch a URL, and which group and rule decided. Its exit status is
// 0 for allowed, 1 for disallowed and 2 for bad input, the interface
// Google's robots.txt conformance harness drives.
func robotsCommand() *cli.Command {
	return &cli.Command{
		Name:      "robots",
		Usage:     "say whether ROBOTS_FILE lets a user agent fetch URL (exit 0 allowed, 1 disallowed)",
		ArgsUsage: "ROBOTS_FILE URL",
		Description: "Reads ROBOTS_FILE as spyder reads a host's robots.txt and prints ALLOWED or\n" +
			"DISALLOWED with the group and rule that decided, e.g. why a host was skipped.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "ua", Value: "spyder", Usage: "user agent `UA`, matched case-insensitively against each group's product token"},
		},
		OnUsageError: onUsageError,
		Action:       runRobots,
	}
}

func runRobots(c *cli.Context) error {
	if c.NArg() != 2 {
		what := fmt.Sprintf("%d arguments", c.NArg())
		if c.NArg() == 1 {
			what = "1 argument"
		}
		return usagef("robots takes ROBOTS_FILE and URL, got %s (see spyder robots --help)", what)
	}
	path, rawURL := c.Args().Get(0), c.Args().Get(1)
	// An empty user agent or URL is not refused: as in Google's parser,
	// the first matches no named group and the second stands for "/".
	ua := strings.TrimSpace(c.String("ua"))
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return usagef("robots file %s: %v", path, err)
	}
	d := robots.DecideFile(data, ua, rawURL)
	fmt.Fprintln(c.App.Writer, describeDecision(d))
	if !d.Allowed {
		return cli.Exit("", 1)
	}
	return nil
}

// describeDecision renders d as one line: the verdict, then the rule and
// group that gave it, or why none did.
func describeDecision(d robots.Decision) string {
	verdict := "ALLOWED"
	if !d.Allowed {
		verdict = "DISALLOWED"
	}
	if d.Rule == nil {
		return verdict + ": " + d.Reason
	}
	return fmt.Sprintf("%s by %q (line %d) in group %q (line %d)",
		verdict, d.Rule.String(), d.Rule.Line, d.Rule.Group.Text, d.Rule.Group.Line)
}
