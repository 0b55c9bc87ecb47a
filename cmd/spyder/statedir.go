package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/spyder-crawler/spyder/store"
	"github.com/spyder-crawler/spyder/store/boltstore"
)

// stateRoot is where a fleet probe's own file goes without --state-dir:
// under the working directory, as --db's default, so that the same command
// run from the same place (a unit's WorkingDirectory, a container's volume)
// finds again what the probe before it kept.
const stateRoot = "spyder-state"

// stateDir is --state-dir, or the default for this probe: one directory
// per probe ID, Redis address and queue key, so that probes of one
// machine with their own --probe never share one.
func stateDir(c *cli.Context) string {
	if d := c.String("state-dir"); d != "" {
		return d
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(c.String("redis")) + "\x00" + c.String("queue-key")))
	name := strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == 0 || r == ':' {
			return '_'
		}
		return r
	}, c.String("probe"))
	return filepath.Join(stateRoot, strings.TrimLeft(name, ".")+"-"+hex.EncodeToString(sum[:4]))
}

// openLocal opens a fleet probe's own file (nil, nil for a standalone run,
// whose bbolt file is already its own disk). A directory another probe
// holds is refused naming that probe. created reports that this call made
// the directory, for a start that fails to remove it again.
func openLocal(c *cli.Context, b store.Backend, log *slog.Logger) (l *boltstore.Local, created string, err error) {
	if !b.Shared() {
		return nil, "", nil
	}
	host, _ := os.Hostname()
	who := fmt.Sprintf("pid %d, probe %s on %s, since %s", os.Getpid(), c.String("probe"), host, time.Now().UTC().Format(time.RFC3339))
	base, tries := stateDir(c), 1
	if c.String("state-dir") == "" {
		tries = maxDefaultDirs
	}
	var locked *boltstore.LockedError
	for i := 1; i <= tries; i++ {
		dir := base
		if i > 1 {
			dir = fmt.Sprintf("%s.%d", base, i)
		}
		_, statErr := os.Stat(dir)
		l, err = boltstore.OpenLocal(dir, who, boltstore.Options{})
		switch {
		case errors.As(err, &locked):
			continue
		case err != nil:
			return nil, "", fmt.Errorf("--state-dir %s: %w", dir, err)
		}
		if errors.Is(statErr, os.ErrNotExist) {
			created = dir
		}
		sp, held, _ := l.Counts(c.Context)
		log.Info("state_dir", "dir", dir, "spooled", sp, "held", held)
		return l, created, nil
	}
	if tries > 1 {
		return nil, "", fmt.Errorf("--state-dir: %s and the %d directories after it are in use by other spyder processes: give this probe its own --state-dir", base, tries-1)
	}
	return nil, "", fmt.Errorf("--state-dir %v: give each probe its own --state-dir", locked)
}

// maxDefaultDirs is how many directories a probe without --state-dir
// tries: the default one, then NAME.2, NAME.3…, the first one free, so
// that several probes started alike from one directory each get their own
// and a restarted one takes over what a stopped one kept.
const maxDefaultDirs = 16

// moveOldSpool moves the batches an older spyder spooled in the shared
// store (Redis) into this probe's own spool, oldest first, and reports how
// many it moved. Nothing is spooled there any more; every probe started
// with --ingest empties it, and a crash between the copy and the removal
// only delivers a batch twice (delivery is at-least-once).
func moveOldSpool(ctx context.Context, from, to store.Spool) (int, error) {
	n := 0
	for {
		id, data, err := from.Peek(ctx)
		if err != nil || id == "" {
			return n, err
		}
		if err := to.Put(ctx, data); err != nil {
			return n, err
		}
		if err := from.Remove(ctx, id); err != nil {
			return n, err
		}
		n++
	}
}

// ingestSpool is where --ingest spools: the probe's own file in a fleet,
// after taking over what an older version left in Redis; the store's
// spool standalone.
func ingestSpool(ctx context.Context, b store.Backend, l *boltstore.Local, log *slog.Logger) (store.Spool, error) {
	shared, err := b.Spool()
	if err != nil || l == nil {
		return shared, err
	}
	n, err := moveOldSpool(ctx, shared, l.Spool())
	if n > 0 {
		log.Info("ingest_spool_moved", "batches", n, "to", l.Dir(), "note", "batches an older spyder spooled in Redis; delivered from this probe's own file")
	}
	if err != nil {
		return nil, fmt.Errorf("move the old spool from %s to %s: %w", b.Name(), l.Dir(), err)
	}
	return l.Spool(), nil
}
