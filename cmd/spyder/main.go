// Command spyder maps how internet domains relate to each other: it probes
// hosts (DNS, TLS certificate, robots.txt and front page) and writes the
// graph it finds as JSON lines. Run it standalone on one bbolt file or as a
// fleet sharing one Redis queue; see README.md, docs/ and `spyder --help`.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first signal, restore the default action: a second
		// Ctrl-C ends the process at once (held leases simply expire).
		<-ctx.Done()
		stop()
	}()
	app := newApp(os.Stdout, os.Stderr)
	app.Reader = os.Stdin // `cat list | spyder run` seeds from it
	err := app.RunContext(ctx, interspersed(app.Commands, os.Args))
	stop()
	if err != nil {
		if err.Error() != "" { // an exit status alone says nothing more
			fmt.Fprintf(os.Stderr, "spyder: %v\n", err)
		}
		os.Exit(exitCode(err))
	}
}
