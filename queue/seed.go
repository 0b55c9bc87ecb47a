package queue

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

	"github.com/spyder-crawler/spyder/host"
	"github.com/spyder-crawler/spyder/internal/errtext"
)

// Limits of a domains file.
const (
	maxDomainLine = 4096   // a host is at most 253 bytes; a URL may be longer
	seedChunk     = 10_000 // hosts per Seed call
	sampleChunk   = 1_000  // hosts of the first Seed call when the queue can grow ahead
	maxLoggedBad  = 10     // rejected lines logged one by one
)

// SeedReport sums up what seeding from a domains file did.
type SeedReport struct {
	Lines     int // lines read
	Added     int
	Duplicate int
	Rejected  int
	CSV       int // lines of a top list (rank,host) whose host column was taken
}

// ErrNoHosts is returned by [SeedFile] for a domains file without any host
// line.
var ErrNoHosts = errors.New("holds no hosts (blank lines and # comments only)")

// SeedFile reads path ("-" for stdin) one host per line and seeds q with
// them in chunks; a top list's `rank,host` lines give their host (logged
// once, domains_csv). This is where a host from a file enters spyder, so each
// line is parsed here ([host.Parse]): blank lines and lines starting with #
// are skipped, CRLF endings and a byte order mark are fine, a URL is
// reduced to its host and an IDN converted to punycode. Lines that are not
// a host are logged with their line number and skipped. A file that cannot
// be read, is a directory, looks binary or holds no host at all is an error
// naming it, and then nothing is seeded.
func SeedFile(ctx context.Context, q Work, path string, stdin io.Reader, log *slog.Logger) (SeedReport, error) {
	name, r, closeFile, err := openDomains(path, stdin)
	if err != nil {
		return SeedReport{}, err
	}
	defer closeFile()
	s := &seeder{q: q, log: log, path: path, name: name, chunk: seedChunk}
	if err := s.planGrowth(path); err != nil {
		return s.rep, err
	}
	if err := s.readAll(ctx, r); err != nil {
		return s.rep, err
	}
	if s.hostLines == 0 {
		return s.rep, fmt.Errorf("%s %w", name, ErrNoHosts)
	}
	if err := s.flush(ctx); err != nil {
		return s.rep, err
	}
	if s.rep.Rejected > maxLoggedBad {
		log.Warn("domain_rejected", "file", path, "more", s.rep.Rejected-maxLoggedBad)
	}
	log.Info("seeded", "file", path, "lines", s.rep.Lines, "added", s.rep.Added, "duplicate", s.rep.Duplicate, "rejected", s.rep.Rejected, "csv", s.rep.CSV)
	if s.rep.Added+s.rep.Duplicate == 0 {
		return s.rep, fmt.Errorf("%s: none of its %d host lines is a valid host", name, s.hostLines)
	}
	return s.rep, nil
}

// CheckFile reports, as one error naming path, why [SeedFile] could not
// seed from it: it is missing, a directory, unreadable or binary. Only a
// regular file is read to check it: stdin ("-") or a pipe (such as a
// shell's process substitution) gives its lines once, so they are left
// for seeding; "" passes.
func CheckFile(path string) error {
	if path == "" || path == "-" {
		return nil
	}
	if st, err := os.Stat(path); err == nil && !st.IsDir() && !st.Mode().IsRegular() {
		return nil
	}
	_, _, closeFile, err := openDomains(path, nil)
	if err != nil {
		return err
	}
	return closeFile()
}

// openDomains opens path ("-": stdin) for reading and checks that it is a
// readable file that does not look binary. name is how messages call it.
func openDomains(path string, stdin io.Reader) (name string, r *bufio.Reader, closeFile func() error, err error) {
	name = "domains file " + path
	closeFile = func() error { return nil }
	src := stdin
	if path == "-" {
		name = "domains on stdin"
	} else {
		st, err := os.Stat(path)
		if err != nil {
			return name, nil, nil, fmt.Errorf("%s: %w", name, errtext.Path(err))
		}
		if st.IsDir() {
			return name, nil, nil, fmt.Errorf("%s is a directory, not a list of hosts", name)
		}
		f, err := os.Open(path)
		if err != nil {
			return name, nil, nil, fmt.Errorf("%s: %w", name, errtext.Path(err))
		}
		src, closeFile = f, f.Close
	}
	r = bufio.NewReaderSize(src, 64<<10)
	head, err := r.Peek(8 << 10)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		closeFile()
		return name, nil, nil, fmt.Errorf("%s: %w", name, errtext.Path(err))
	}
	if i := bytes.IndexByte(head, 0); i >= 0 {
		closeFile()
		return name, nil, nil, fmt.Errorf("%s looks binary (a NUL byte at offset %d), not one host per line", name, i)
	}
	return name, r, closeFile, nil
}

// seeder parses the lines of one domains file and seeds the hosts in
// chunks, remembering each host's line so that a rejection names it.
type seeder struct {
	q          Work
	log        *slog.Logger
	path, name string

	rep       SeedReport
	hostLines int // lines that are neither blank nor a comment
	hosts     []host.Name

	chunk     int    // hosts per Seed call: sampleChunk until grow ran
	fileHosts int    // host lines in the whole file, when known ahead
	grow      Grower // the queue, when it can grow ahead
}

// Grower is a queue whose seen set can make room ahead for hosts about to
// be seeded, so that they are added without rehashing it as it grows.
// [SeedFile] grows a queue that is one (the Redis backend's host table
// is) before seeding a large file.
type Grower interface {
	// Grow makes room for about more hosts beyond those seen.
	Grow(ctx context.Context, more int) error
}

// planGrowth prepares growing the queue ahead when it can grow and path is
// a regular file: it counts the file's host lines, and the first Seed call
// takes a sample of sampleChunk hosts, whose share of new ones tells how
// many of the rest will be new (seeding a list again grows nothing).
func (s *seeder) planGrowth(path string) error {
	g, ok := s.q.(Grower)
	if !ok || path == "-" {
		return nil
	}
	if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() {
		return nil
	}
	n, err := countHostLines(path)
	if err != nil {
		return fmt.Errorf("%s: %w", s.name, errtext.Path(err))
	}
	if n > seedChunk {
		s.grow, s.fileHosts, s.chunk = g, n, sampleChunk
	}
	return nil
}

// growAhead, after the sample, makes room for the new hosts the rest of the
// file is expected to hold (once; nothing when the queue cannot grow).
func (s *seeder) growAhead(ctx context.Context) error {
	g := s.grow
	s.grow, s.chunk = nil, seedChunk
	if g == nil {
		return nil
	}
	more := int(int64(s.fileHosts-s.hostLines) * int64(s.rep.Added) / int64(s.hostLines))
	if err := g.Grow(ctx, more); err != nil {
		return fmt.Errorf("seed from %s: make room for %d hosts: %w", s.name, more, err)
	}
	return nil
}

// countHostLines counts the lines of the file at path that are neither
// blank nor a comment: the hosts it holds, give or take a rejected line.
func countHostLines(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	n, start := 0, true // start: at the first byte of a line not yet counted
	for {
		line, err := r.ReadSlice('\n')
		if start {
			t := bytes.TrimSpace(bytes.TrimPrefix(line, []byte("\ufeff")))
			if len(t) > 0 && t[0] != '#' {
				n++
			}
		}
		start = !errors.Is(err, bufio.ErrBufferFull)
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil && start {
			return n, err
		}
	}
}

// readAll reads r line by line to its end, seeding every full chunk.
func (s *seeder) readAll(ctx context.Context, r *bufio.Reader) error {
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			s.rep.Lines++
			s.hostLines++
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.ReadSlice('\n')
			}
			s.reject(s.rep.Lines, string(line[:80]), fmt.Sprintf("line longer than %d bytes", maxDomainLine))
		} else if len(line) > 0 {
			s.rep.Lines++
			s.take(string(line))
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: read line %d: %w", s.name, s.rep.Lines+1, err)
		}
		if len(s.hosts) >= s.chunk {
			if err := s.flush(ctx); err != nil {
				return err
			}
			if err := s.growAhead(ctx); err != nil {
				return err
			}
		}
	}
}

// take parses one line: a comment or blank line is skipped, a host is
// kept for the next Seed, anything else is rejected with why.
func (s *seeder) take(line string) {
	t := strings.TrimSpace(strings.TrimPrefix(line, "\ufeff"))
	if t == "" || strings.HasPrefix(t, "#") {
		return
	}
	s.hostLines++
	if h, ok := rankedHost(t); ok {
		if s.rep.CSV++; s.rep.CSV == 1 {
			s.log.Info("domains_csv", "file", s.path, "line", s.rep.Lines,
				"note", "rank,domain lines (a Tranco or Umbrella list): the host column is taken")
		}
		t = h
	}
	switch {
	case len(t) > maxDomainLine:
		s.reject(s.rep.Lines, t, fmt.Sprintf("line longer than %d bytes", maxDomainLine))
	case strings.IndexByte(t, 0) >= 0:
		s.reject(s.rep.Lines, t, "NUL byte in line")
	default:
		h, err := host.Parse(t)
		var he *host.Error
		switch {
		case errors.As(err, &he):
			s.reject(s.rep.Lines, he.Input, he.Reason)
		case err != nil:
			s.reject(s.rep.Lines, t, err.Error())
		default:
			s.hosts = append(s.hosts, h)
		}
	}
}

// rankedHost returns the host column of a line of a top list, `rank,host`
// (Tranco, Umbrella, Alexa): a whole number, a comma, and the rest. A host
// never holds a comma, so no host line is mistaken for one.
func rankedHost(t string) (string, bool) {
	rank, rest, ok := strings.Cut(t, ",")
	if !ok || rank == "" || strings.TrimLeft(rank, "0123456789") != "" {
		return "", false
	}
	return strings.TrimSpace(rest), true
}

// reject counts a line that is not a host and logs the first few.
func (s *seeder) reject(line int, input, reason string) {
	s.rep.Rejected++
	if s.rep.Rejected <= maxLoggedBad {
		s.log.Warn("domain_rejected", "file", s.path, "line", line, "input", errtext.Clip(input, 80), "reason", reason)
	}
}

// flush seeds the hosts kept so far.
func (s *seeder) flush(ctx context.Context) error {
	if len(s.hosts) == 0 {
		return nil
	}
	res, err := s.q.Seed(ctx, s.hosts)
	if err != nil {
		return fmt.Errorf("seed from %s: %w", s.name, err)
	}
	s.rep.Added += res.Added
	s.rep.Duplicate += res.Duplicate
	s.hosts = s.hosts[:0]
	return nil
}
