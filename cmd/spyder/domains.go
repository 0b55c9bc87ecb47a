package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"spyder/queue"
)

// Limits of a domains file.
const (
	maxDomainLine = 4096   // a host is at most 253 bytes; a URL may be longer
	seedChunk     = 10_000 // hosts per Seed call
	maxLoggedBad  = 10     // rejected lines logged one by one
)

// seedReport sums up what seeding a domains file did.
type seedReport struct {
	Lines     int // lines read
	Added     int
	Duplicate int
	Rejected  int
}

// errNoHosts is returned for a domains file without any host line.
var errNoHosts = errors.New("holds no hosts (blank lines and # comments only)")

// seedDomains reads path ("-" for stdin) one host per line and seeds q with
// them in chunks. Blank lines and lines starting with # are skipped, CRLF
// endings and a byte order mark are fine, a URL is reduced to its host and
// an IDN converted to punycode (queue.NormalizeHost). Lines that are not a
// host are logged with their line number and skipped. A file that cannot
// be read, is a directory, looks binary or holds no host at all is an error
// naming it, and then nothing is seeded.
func seedDomains(ctx context.Context, q queue.Queue, path string, stdin io.Reader, log *slog.Logger) (seedReport, error) {
	var rep seedReport
	name := "domains file " + path
	var r io.Reader
	if path == "-" {
		name, r = "domains on stdin", stdin
	} else {
		st, err := os.Stat(path)
		if err != nil {
			return rep, fmt.Errorf("%s: %w", name, pathErr(err))
		}
		if st.IsDir() {
			return rep, fmt.Errorf("%s is a directory, not a list of hosts", name)
		}
		f, err := os.Open(path)
		if err != nil {
			return rep, fmt.Errorf("%s: %w", name, pathErr(err))
		}
		defer f.Close()
		r = f
	}
	br := bufio.NewReaderSize(r, 64<<10)
	head, err := br.Peek(8 << 10)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return rep, fmt.Errorf("%s: %w", name, pathErr(err))
	}
	if i := bytes.IndexByte(head, 0); i >= 0 {
		return rep, fmt.Errorf("%s looks binary (a NUL byte at offset %d), not one host per line", name, i)
	}

	var hosts []string
	var lines []int
	var bad int
	reject := func(line int, input, reason string) {
		rep.Rejected++
		bad++
		if bad <= maxLoggedBad {
			log.Warn("domain_rejected", "file", path, "line", line, "input", clipString(input, 80), "reason", reason)
		}
	}
	flush := func() error {
		if len(hosts) == 0 {
			return nil
		}
		res, err := q.Seed(ctx, hosts)
		if err != nil {
			return fmt.Errorf("seed from %s: %w", name, err)
		}
		rep.Added += res.Added
		rep.Duplicate += res.Duplicate
		for _, rj := range res.Rejected {
			reason := rj.Err.Error()
			if s, ok := strings.CutPrefix(reason, "invalid host "+fmt.Sprintf("%q", rj.Input)+": "); ok {
				reason = s
			}
			reject(lines[rj.Index], rj.Input, reason)
		}
		hosts, lines = hosts[:0], lines[:0]
		return nil
	}
	hostLines := 0
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			rep.Lines++
			hostLines++
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			reject(rep.Lines, string(line[:80]), fmt.Sprintf("line longer than %d bytes", maxDomainLine))
		} else if len(line) > 0 {
			rep.Lines++
			s := strings.TrimSpace(strings.TrimPrefix(string(line), "\ufeff"))
			switch {
			case s == "" || strings.HasPrefix(s, "#"):
			case len(s) > maxDomainLine:
				hostLines++
				reject(rep.Lines, s, fmt.Sprintf("line longer than %d bytes", maxDomainLine))
			case strings.IndexByte(s, 0) >= 0:
				hostLines++
				reject(rep.Lines, s, "NUL byte in line")
			default:
				hostLines++
				hosts = append(hosts, s)
				lines = append(lines, rep.Lines)
				if len(hosts) >= seedChunk {
					if err := flush(); err != nil {
						return rep, err
					}
				}
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return rep, fmt.Errorf("%s: read line %d: %w", name, rep.Lines+1, err)
		}
	}
	if hostLines == 0 {
		return rep, fmt.Errorf("%s %w", name, errNoHosts)
	}
	if err := flush(); err != nil {
		return rep, err
	}
	if bad > maxLoggedBad {
		log.Warn("domain_rejected", "file", path, "more", bad-maxLoggedBad)
	}
	log.Info("seeded", "file", path, "lines", rep.Lines, "added", rep.Added, "duplicate", rep.Duplicate, "rejected", rep.Rejected)
	if rep.Added+rep.Duplicate == 0 {
		return rep, fmt.Errorf("%s: none of its %d host lines is a valid host", name, hostLines)
	}
	return rep, nil
}

// pathErr drops the repeated path of an *os.PathError.
func pathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func clipString(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
