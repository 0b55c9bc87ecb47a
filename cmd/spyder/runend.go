package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/spyder-crawler/spyder/queue"
	"github.com/spyder-crawler/spyder/store"
)

// Exit statuses of spyder, as `spyder --help` lists them.
const (
	exitOK          = 0   // finished: nothing is left to do
	exitError       = 1   // an error, named in one line on stderr
	exitUsage       = 2   // a mistake in how spyder was called
	exitInterrupted = 130 // stopped by SIGINT or SIGTERM with hosts left to crawl
)

// exitHelp is the exit statuses as the help of spyder and spyder run
// state them.
const exitHelp = "Exit status: 0 finished (nothing left to crawl), 1 error (one line on stderr says\n" +
	"which), 2 usage (a flag, argument or command spyder does not take), 130 interrupted by\n" +
	"Ctrl-C or SIGTERM with hosts left to crawl (running the same command again goes on). A\n" +
	"fleet probe (--redis without --exit-when-empty) ends by a signal: it exits 0 then."

// pipedStdin returns r when it is a pipe or a regular file (`cat list |
// spyder run`, `spyder run < list`) that spyder should read hosts from, or
// nil: a terminal or /dev/null holds no hosts, and in-process tests give
// the app no file at all.
func pipedStdin(r io.Reader) *os.File {
	f, ok := r.(*os.File)
	if !ok || f == nil {
		return nil
	}
	st, err := f.Stat()
	if err != nil {
		return nil
	}
	if m := st.Mode(); m&os.ModeNamedPipe != 0 || m.IsRegular() {
		return f
	}
	return nil
}

// seedImplicitStdin seeds b from piped stdin when a standalone run was
// given no --domains, saying so first: a run that waits on a pipe that
// has not ended must not look hung. An empty pipe seeds nothing and is no
// error: stdin was not meant as a list then.
func seedImplicitStdin(ctx context.Context, cfg runConfig, b store.Backend, log *slog.Logger) (queue.SeedReport, error) {
	log.Info("reading_stdin", "note", "no --domains: reading hosts from stdin until it ends")
	rep, err := queue.SeedFile(ctx, b, "-", cfg.stdin, log)
	if errors.Is(err, queue.ErrNoHosts) && rep.Lines == 0 {
		return rep, nil
	}
	return rep, err
}

// nothingToDo is the error of a standalone run whose queue holds nothing
// pending or in flight once seeded.
type nothingToDo struct{ error }

func (e nothingToDo) Unwrap() error { return e.error }

// errNothingToDo is the error of a standalone run whose queue holds nothing
// pending or in flight once seeded: it would write nothing, and a user
// whose shell already emptied `> graph.jsonl` must hear why, not see an
// exit 0. It names the ways to crawl again.
func errNothingToDo(cfg runConfig, name string, rep *queue.SeedReport, st queue.Stats) error {
	dead := ""
	if st.Dead > 0 {
		dead = fmt.Sprintf("; %d hosts are dead (`spyder queue dead list`, `spyder queue dead retry`)", st.Dead)
	}
	again := func(them string) string {
		return "crawl " + them + " again with --revisit AGE (the hosts probed longer ago than AGE), or start afresh with another --db"
	}
	switch {
	case rep != nil && rep.Duplicate == 1:
		return nothingToDo{fmt.Errorf("nothing to crawl: the one host of %s is done in %s%s; %s", seedName(cfg), name, dead, again("it"))}
	case rep != nil && rep.Duplicate > 0:
		return nothingToDo{fmt.Errorf("nothing to crawl: the %d hosts of %s are all done in %s%s; %s", rep.Duplicate, seedName(cfg), name, dead, again("them"))}
	case st.Seen == 0:
		return nothingToDo{fmt.Errorf("nothing to crawl: %s holds no hosts (a new file, or a mistyped --db?); give --domains FILE or pipe hosts to stdin", name)}
	}
	return nothingToDo{fmt.Errorf("nothing to crawl: every host in %s is done%s; give --domains with new hosts, or %s", name, dead, again("them"))}
}

// seedName is how errNothingToDo calls where the hosts came from.
func seedName(cfg runConfig) string {
	if cfg.domains == "-" {
		return "stdin"
	}
	return cfg.domains
}

// interrupted returns the exit error of a run stopped by a signal, or nil
// when it should exit 0: nothing is left to crawl, or it is a fleet probe
// (whose normal end is a signal). left is what the queue still holds, or
// -1 when the signal came while the run was starting.
func interrupted(shared, exitWhenEmpty bool, left int64) error {
	if left == 0 || (shared && !exitWhenEmpty) {
		return nil
	}
	if left < 0 {
		return cli.Exit("interrupted while starting; run the same command again to go on", exitInterrupted)
	}
	return cli.Exit(fmt.Sprintf("interrupted with %d hosts left to crawl; run the same command again to go on", left), exitInterrupted)
}
