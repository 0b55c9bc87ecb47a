package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/spyder-crawler/spyder"

	"github.com/urfave/cli/v2"
	"github.com/urfave/cli/v2/altsrc"
	"go.etcd.io/bbolt"
	"golang.org/x/term"

	"github.com/spyder-crawler/spyder/dashboard"
	"github.com/spyder-crawler/spyder/queue"
	"github.com/spyder-crawler/spyder/store"
	"github.com/spyder-crawler/spyder/store/boltstore"
	"github.com/spyder-crawler/spyder/store/redisstore"
)

// usageError is an error in how spyder was called; main exits 2 for it.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// exitCode maps an error returned by the app to the process exit code.
func exitCode(err error) int {
	var ue usageError
	var ec cli.ExitCoder
	switch {
	case errors.As(err, &ue):
		return exitUsage
	case errors.As(err, &ec):
		return ec.ExitCode()
	}
	return exitError
}

// newApp builds the command line, writing output to stdout and messages
// to stderr, so tests run it in-process.
func newApp(stdout, stderr io.Writer) *cli.App {
	app := &cli.App{
		Name:    "spyder",
		Usage:   "map how internet domains relate: DNS, TLS certificates and links, as a graph in JSON lines",
		Version: spyder.Version,
		Description: "spyder probes hosts (DNS records, the TLS certificate, robots.txt and the front page)\n" +
			"and writes the nodes and edges it finds. Standalone, the crawl state lives in one bbolt\n" +
			"file (--db) and survives Ctrl-C or a crash; in a fleet, every probe shares one Redis\n" +
			"queue (--redis). Every flag also reads an environment variable (shown in [brackets])\n" +
			"and, with --config FILE, a YAML file whose keys are the flag names.\n\n" + exitHelp,
		Reader:               strings.NewReader(""), // main gives os.Stdin; tests give none
		Writer:               stdout,
		ErrWriter:            stderr,
		ExitErrHandler:       func(*cli.Context, error) {},
		EnableBashCompletion: true,
		Commands:             withCompletion([]*cli.Command{runCommand(), queueCommand(), graphCommand(), robotsCommand(), completionCommand(), manCommand(), versionCommand()}),
		BashComplete:         completeArgs,
		OnUsageError:         onUsageError,
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("unknown command %q%s (see spyder --help)", c.Args().First(), suggestCommand(c.Args().First(), c.App.Commands))
			}
			return cli.ShowAppHelp(c)
		},
	}
	unknownInGroups(app.Commands)
	return app
}

// versionCommand is `spyder version`, which prints what --version does.
func versionCommand() *cli.Command {
	return &cli.Command{
		Name: "version", Usage: "print the version (as --version does)",
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("version takes no arguments")
			}
			cli.ShowVersion(c)
			return nil
		},
	}
}

// unknownInGroups gives each command group (queue, queue dead, graph) the
// answers the top level gives: to a word that names none of its commands, a
// usage error that names the word, where urfave/cli would look for a help
// topic of that name and exit 3; to a flag, which a group never takes (its
// commands do, after their name), a one-line usage error saying so, where
// urfave/cli would print the group's whole help and exit 1. Without a
// word, the group's help is shown.
func unknownInGroups(cmds []*cli.Command) {
	for _, cmd := range cmds {
		if len(cmd.Subcommands) == 0 || cmd.Action != nil {
			continue
		}
		cmd.OnUsageError = func(c *cli.Context, err error, _ bool) error {
			return usagef("%v (%s takes no flags of its own: give them after one of its commands, see %[2]s --help)",
				err, c.Command.HelpName)
		}
		cmd.Action = func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("unknown command %q%s (see %s --help)", c.Args().First(),
					suggestCommand(c.Args().First(), c.Command.Subcommands), c.Command.HelpName)
			}
			return cli.ShowSubcommandHelp(c)
		}
		unknownInGroups(cmd.Subcommands)
	}
}

func onUsageError(c *cli.Context, err error, _ bool) error {
	return usagef("%v (see %s --help)", unknownFlag(c.Command.Flags, plainValueError(c.Command.Flags, err)), c.Command.HelpName)
}

// The errors Go's flag package and urfave/cli give a value that does not
// parse, with the value and where it came from.
var (
	badFlagValue = regexp.MustCompile(`^invalid (?:boolean )?value "(.*)" for (?:flag )?-([\w-]+): `)
	badEnvValue  = regexp.MustCompile(`^could not parse "(.*)" as \w+ value from environment variable "(\w+)" for flag ([\w-]+): `)
)

// plainValueError rewrites the error of a flag value that does not parse
// (`invalid value "30" for flag -host-timeout: parse error`) as one that
// says what the flag wants (`--host-timeout "30": want a duration such as
// 30s or 2m`), in the words a config file's errors use. Other errors are
// returned as they are.
func plainValueError(flags []cli.Flag, err error) error {
	msg := err.Error()
	var value, source, name string
	if m := badFlagValue.FindStringSubmatch(msg); m != nil {
		value, name = m[1], m[2]
		source = "--" + name
	} else if m := badEnvValue.FindStringSubmatch(msg); m != nil {
		value, source, name = m[1], m[2], m[3]
	} else {
		return err
	}
	for _, f := range flags {
		if slices.Contains(f.Names(), name) {
			if want := flagWants(f); want != "" {
				return fmt.Errorf("%s %q: want %s", source, value, want)
			}
		}
	}
	return err
}

// flagWants says what a value of f must be, for the kinds of flag whose
// values can fail to parse, or "" for others.
func flagWants(f cli.Flag) string {
	switch f.(type) {
	case *cli.IntFlag, *altsrc.IntFlag:
		return "a whole number"
	case *cli.Float64Flag, *altsrc.Float64Flag:
		return "a number"
	case *cli.DurationFlag, *altsrc.DurationFlag:
		return "a duration such as 30s or 2m"
	case *cli.BoolFlag, *altsrc.BoolFlag:
		return "true or false"
	}
	return ""
}

// withConfig makes a command's flags also read the YAML file named by
// --config, after the command line and the environment.
func withConfig(cmd *cli.Command) *cli.Command {
	cmd.Flags = append(cmd.Flags, &cli.StringFlag{
		Name: "config", Usage: "read flag values from this YAML `FILE` (keys are flag names)",
		EnvVars: []string{"SPYDER_CONFIG"}, TakesFile: true,
	})
	cmd.OnUsageError = onUsageError
	next := cmd.Before
	cmd.Before = func(c *cli.Context) error {
		if err := loadConfig(c, cmd.Flags); err != nil {
			return err
		}
		if next != nil {
			return next(c)
		}
		return nil
	}
	return cmd
}

// Flag categories, so --help groups them.
const (
	catQueue  = "Queue backend"
	catCrawl  = "Crawl"
	catOutput = "Output"
	catOps    = "Operations"
)

// backendFlags are the flags every command that touches the queue takes.
func backendFlags() []cli.Flag {
	return []cli.Flag{
		altsrc.NewStringFlag(&cli.StringFlag{Name: "db", Value: "spyder.db", Category: catQueue, TakesFile: true,
			Usage: "bbolt `FILE` holding the whole crawl state (standalone mode)", EnvVars: []string{"SPYDER_DB"}}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "redis", Category: catQueue,
			Usage:   "Redis `ADDR` for a fleet: host:port, redis://[user:pass@]host:port/db, rediss://..., or a comma-separated cluster list; set, it replaces --db",
			EnvVars: []string{"SPYDER_REDIS", "REDIS_QUEUE_ADDR"}}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "queue-key", Value: queue.DefaultKey, Category: catQueue,
			Usage: "Redis base `KEY` of the queue (on a Redis Cluster, without braces: each shard gets its own {hash tag})", EnvVars: []string{"SPYDER_QUEUE_KEY"}}),
		altsrc.NewIntFlag(&cli.IntFlag{Name: "shards", Category: catQueue,
			Usage: "split the Redis queue into `N` shards (0: the count stored with the queue, else 1 on one server, 16 a master rounded up to a power of two on a Redis Cluster)", EnvVars: []string{"SPYDER_SHARDS"}}),
		altsrc.NewDurationFlag(&cli.DurationFlag{Name: "redis-seed-wait", Category: catQueue, EnvVars: []string{"SPYDER_REDIS_SEED_WAIT"},
			Usage: "after each seed write, wait up to this long for a Redis replica to have it (WAIT 1), so a failover cannot lose seeds; 0: no wait"}),
		altsrc.NewStringFlag(&cli.StringFlag{Name: "log-level", Value: "info", Category: catOps,
			Usage: "log `LEVEL`: debug, info, warn or error", EnvVars: []string{"SPYDER_LOG_LEVEL"}}),
	}
}

// newLogger returns the logger for --log-level: text on a terminal, JSON
// lines otherwise.
func newLogger(c *cli.Context, w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.String("log-level"))); err != nil {
		return nil, usagef("--log-level %q: want debug, info, warn or error", c.String("log-level"))
	}
	opts := &slog.HandlerOptions{Level: level}
	if isTerminal(w) {
		return slog.New(slog.NewTextHandler(w, opts)), nil
	}
	return slog.New(slog.NewJSONHandler(w, opts)), nil
}

// isTerminal reports whether x (an *os.File, possibly behind the progress
// line's writer) is a terminal. Other character devices, such as
// /dev/null, are not: a command started with no input reads none.
func isTerminal(x any) bool {
	if lw, ok := x.(*lineWriter); ok {
		x = lw.w
	}
	f, ok := x.(*os.File)
	if !ok {
		return false
	}
	// Through Control rather than Fd, which would make f blocking.
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	tty := false
	rc.Control(func(fd uintptr) { tty = term.IsTerminal(int(fd)) })
	return tty
}

// openBackend opens the store the flags name: Redis when --redis is set,
// else the bbolt file --db. With mustExist, a missing bbolt file is an
// error instead of being created (commands that only read). Errors name
// the file or the server.
func openBackend(ctx context.Context, c *cli.Context, mustExist bool) (store.Backend, error) {
	if addr := strings.TrimSpace(c.String("redis")); addr != "" {
		wait := c.Duration("redis-seed-wait")
		if wait < 0 {
			return nil, usagef("--redis-seed-wait %v: want 0 or more", wait)
		}
		s, err := redisstore.Dial(ctx, addr, redisstore.Options{Key: c.String("queue-key"), Shards: c.Int("shards"), SeedWait: wait})
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	path := c.String("db")
	if path == "" {
		return nil, usagef("--db is empty: name the bbolt file holding the crawl, or set --redis")
	}
	st, err := os.Stat(path)
	switch {
	case err == nil && st.IsDir():
		return nil, fmt.Errorf("--db %s is a directory, not a bbolt file", path)
	case errors.Is(err, os.ErrNotExist) && mustExist:
		return nil, fmt.Errorf("--db %s does not exist (seed it with `spyder queue seed` or `spyder run --domains`)", path)
	}
	s, err := boltstore.Open(path, boltstore.Options{})
	if errors.Is(err, boltstore.ErrDamaged) {
		return nil, fmt.Errorf("%w; `spyder queue salvage --db=%s --to=NEW.db` copies what it can still read into a new file", err, path)
	}
	if err != nil {
		if _, ok := dashboard.DialSocket(dashboard.SocketPath(path)); ok && errors.Is(err, bbolt.ErrTimeout) {
			return nil, fmt.Errorf("--db %s is in use by a running `spyder run`: stop it first (`queue stats` and `queue dead list|retry` work while it runs)", path)
		}
		return nil, err
	}
	return s, nil
}

// closeBackend closes b; a second close is not an error.
func closeBackend(b store.Backend) error {
	if err := b.Close(); err != nil && !errors.Is(err, queue.ErrClosed) {
		return err
	}
	return nil
}
