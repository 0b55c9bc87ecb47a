package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"spyder/crawl"
)

// outputs is the set of sinks a run writes to, and how to close them.
type outputs struct {
	sink   crawl.Sink
	closes []func() error
}

func (o *outputs) Close() error {
	var errs []error
	for i := len(o.closes) - 1; i >= 0; i-- {
		errs = append(errs, o.closes[i]())
	}
	return errors.Join(errs...)
}

// teeSink writes each batch to every sink in turn; the batch is durable
// once all of them have it.
type teeSink []crawl.Sink

func (t teeSink) WriteBatch(ctx context.Context, b *crawl.Batch) error {
	for _, s := range t {
		if err := s.WriteBatch(ctx, b); err != nil {
			return err
		}
	}
	return nil
}

// countingSink counts in metrics what its sink made durable.
type countingSink struct {
	crawl.Sink
	m *metrics
}

func (c countingSink) WriteBatch(ctx context.Context, b *crawl.Batch) error {
	if err := c.Sink.WriteBatch(ctx, b); err != nil {
		return err
	}
	c.m.observeBatch(b)
	return nil
}

// openFileSink opens --out for appending (a resumed run adds to it) and
// returns a sink that fsyncs every batch.
func openFileSink(path, format string, log *slog.Logger) (crawl.Sink, func() error, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return nil, nil, fmt.Errorf("--out %s is a directory", path)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("--out %s: %w", path, pathErr(err))
	}
	if endsMidLine(path) {
		// A run killed inside a write (SIGKILL can cut one short) left part
		// of a batch it never acknowledged. End that line, so the next batch
		// starts a line of its own instead of being glued to it and lost to
		// every reader; the cut one's hosts are probed again anyway.
		if _, err := f.Write([]byte("\n")); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("--out %s: %w", path, err)
		}
		log.Warn("out_partial_line", "file", path,
			"note", "the file ended inside a batch line (a run was killed while writing it): that line is left as it was, not valid JSON; its hosts are probed again")
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("--out %s: %w", path, err)
	}
	s, err := crawl.NewJSONSink(&wholeLines{File: f, size: st.Size()}, format)
	if err != nil {
		f.Close()
		return nil, nil, usagef("--format: %v", err)
	}
	return s, func() error {
		if err := f.Sync(); err != nil {
			f.Close()
			return fmt.Errorf("--out %s: %w", path, err)
		}
		return f.Close()
	}, nil
}

// endsMidLine reports whether path is a regular file that is not empty and
// does not end with a newline.
func endsMidLine(path string) bool {
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() || st.Size() == 0 {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [1]byte
	_, err = f.ReadAt(b[:], st.Size()-1)
	return err == nil && b[0] != '\n'
}

// wholeLines is an --out file that a failed write (a full disk takes part
// of a batch, then fails) cuts back to its last whole batch, so the file
// stays JSON lines and a resumed run appends after the last complete one.
type wholeLines struct {
	*os.File
	size int64
}

func (w *wholeLines) Write(p []byte) (int, error) {
	n, err := w.File.Write(p)
	if err != nil {
		if n > 0 {
			if terr := w.File.Truncate(w.size); terr != nil {
				return n, fmt.Errorf("%w (and cutting off the partial batch: %v)", err, terr)
			}
		}
		return 0, err
	}
	w.size += int64(n)
	return n, nil
}

// ingestSink POSTs each batch (one JSON object) to an HTTP endpoint,
// retrying with exponential backoff. A batch the endpoint does not take
// after the retries is spooled in the store, which makes it durable; a
// background replayer delivers the spool, oldest first, at start and as
// soon as the endpoint answers again. While the endpoint is down new
// batches go straight to the spool.
type ingestSink struct {
	url     string
	client  *http.Client
	spool   spool
	retries int
	backoff time.Duration // first retry delay; doubles up to maxBackoff
	log     *slog.Logger
	m       *metrics

	down   atomic.Bool
	kick   chan struct{}
	stop   chan struct{}
	done   chan struct{}
	closer sync.Once
}

const (
	maxBackoff    = 30 * time.Second
	replayPollGap = 5 * time.Second
)

func newIngestSink(url string, timeout time.Duration, retries int, sp spool, log *slog.Logger, m *metrics) *ingestSink {
	s := &ingestSink{
		url: url, client: &http.Client{Timeout: timeout}, spool: sp, retries: retries,
		backoff: 200 * time.Millisecond, log: log, m: m,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
	go s.replayLoop()
	return s
}

// WriteBatch implements crawl.Sink: it returns nil once the batch was
// delivered or spooled.
func (s *ingestSink) WriteBatch(ctx context.Context, b *crawl.Batch) error {
	data, err := json.Marshal(b)
	if err != nil {
		return fmt.Errorf("encode batch: %w", err)
	}
	if !s.down.Load() {
		delay := s.backoff
		for attempt := 0; ; attempt++ {
			err = s.post(ctx, data)
			if err == nil {
				return nil
			}
			if attempt >= s.retries || ctx.Err() != nil {
				break
			}
			s.m.sinkRetries.Inc()
			s.log.Debug("ingest_retry", "url", s.url, "attempt", attempt+1, "err", err)
			if !sleep(ctx, jitter(delay)) {
				break
			}
			delay = min(delay*2, maxBackoff)
		}
		if !s.down.Swap(true) {
			s.log.Warn("ingest_down", "url", s.url, "err", err, "note", "batches are spooled in the store and replayed when it answers")
		}
	}
	if err := s.spool.Put(context.WithoutCancel(ctx), data); err != nil {
		return fmt.Errorf("ingest %s failed and spooling failed too: %w", s.url, err)
	}
	s.m.spooled.Inc()
	s.m.spoolDepth.Inc()
	select {
	case s.kick <- struct{}{}:
	default:
	}
	return nil
}

// post delivers one batch; only a 2xx answer counts.
func (s *ingestSink) post(ctx context.Context, data []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "spyder/"+crawl.Version)
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: %s", s.url, resp.Status)
	}
	return nil
}

// replayLoop delivers spooled batches until Close.
func (s *ingestSink) replayLoop() {
	defer close(s.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-s.stop
		cancel()
	}()
	delay := time.Second
	for {
		n, err := s.replay(ctx)
		if ctx.Err() != nil {
			return
		}
		if n > 0 {
			s.log.Info("ingest_replayed", "url", s.url, "batches", n)
		}
		wait := replayPollGap
		if err != nil {
			wait = jitter(delay)
			delay = min(delay*2, maxBackoff)
		} else {
			delay = time.Second
		}
		select {
		case <-s.stop:
			return
		case <-s.kick:
			if s.down.Load() {
				// Spooled while down: wait the backoff before trying.
				select {
				case <-s.stop:
					return
				case <-time.After(wait):
				}
			}
		case <-time.After(wait):
		}
	}
}

// replay delivers the spool oldest first until it is empty (the endpoint
// is up again) or a delivery fails.
func (s *ingestSink) replay(ctx context.Context) (int, error) {
	n := 0
	for {
		id, data, err := s.spool.Peek(ctx)
		if err != nil {
			return n, err
		}
		if id == "" {
			s.m.spoolDepth.Set(0)
			if s.down.Swap(false) {
				s.log.Info("ingest_up", "url", s.url)
			}
			return n, nil
		}
		if err := s.post(ctx, data); err != nil {
			s.down.Store(true)
			return n, err
		}
		if err := s.spool.Remove(ctx, id); err != nil {
			return n, err
		}
		n++
		s.m.replayed.Inc()
		s.m.spoolDepth.Dec()
	}
}

// Close stops the replayer; what is still spooled stays for the next run.
func (s *ingestSink) Close() error {
	s.closer.Do(func() { close(s.stop) })
	<-s.done
	// One last delivery attempt, so a run that ends soon after the endpoint
	// came back leaves nothing behind.
	ctx, cancel := context.WithTimeout(context.Background(), s.client.Timeout+time.Second)
	defer cancel()
	if n, _ := s.replay(ctx); n > 0 {
		s.log.Info("ingest_replayed", "url", s.url, "batches", n)
	}
	if n, err := s.spool.Len(context.Background()); err == nil && n > 0 {
		s.log.Warn("ingest_spooled", "url", s.url, "batches", n, "note", "kept in the store; the next run replays them")
	}
	return nil
}

func jitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d/2+1)
}

// sleep waits d or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
