package sink

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spyder-crawler/spyder"

	"github.com/spyder-crawler/spyder/metrics"
	"github.com/spyder-crawler/spyder/store"
)

// Ingest POSTs each batch (one JSON object) to an HTTP endpoint,
// retrying with exponential backoff. A batch the endpoint does not take
// after the retries is spooled on disk, which makes it durable; a
// background replayer delivers the spool, oldest first, at start and as
// soon as the endpoint answers again. While the endpoint is down new
// batches go straight to the spool.
type Ingest struct {
	url     string
	client  *http.Client
	spool   store.Spool
	retries int
	backoff time.Duration // first retry delay; doubles up to maxBackoff
	log     *slog.Logger
	m       *metrics.Set

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

// NewIngest returns the sink posting to url, each POST bounded by timeout
// and retried retries times before its batch goes to sp. Its replayer runs
// until Close.
func NewIngest(url string, timeout time.Duration, retries int, sp store.Spool, log *slog.Logger, m *metrics.Set) *Ingest {
	s := &Ingest{
		url: url, client: &http.Client{Timeout: timeout}, spool: sp, retries: retries,
		backoff: 200 * time.Millisecond, log: log, m: m,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
	go s.replayLoop()
	return s
}

// WriteBatch implements [Sink]: it returns nil once the batch was
// delivered or spooled. While the endpoint is known to be down the batch
// goes straight to the spool.
func (s *Ingest) WriteBatch(ctx context.Context, b *spyder.Batch) error {
	data, err := json.Marshal(b)
	if err != nil {
		return fmt.Errorf("encode batch: %w", err)
	}
	if !s.down.Load() {
		err := s.deliver(ctx, data)
		if err == nil {
			return nil
		}
		if !s.down.Swap(true) {
			s.log.Warn("ingest_down", "url", s.url, "err", err, "note", "batches are spooled on disk and replayed when it answers")
		}
	}
	if err := s.spool.Put(context.WithoutCancel(ctx), data); err != nil {
		return fmt.Errorf("ingest %s failed and spooling failed too: %w", s.url, err)
	}
	s.m.Spooled.Inc()
	s.m.SpoolDepth.Inc()
	select {
	case s.kick <- struct{}{}:
	default:
	}
	return nil
}

// deliver posts data, retrying up to retries times with exponential
// backoff (jittered, capped at maxBackoff), and returns the last error.
func (s *Ingest) deliver(ctx context.Context, data []byte) error {
	delay := s.backoff
	for attempt := 0; ; attempt++ {
		err := s.post(ctx, data)
		if err == nil || attempt >= s.retries || ctx.Err() != nil {
			return err
		}
		s.m.SinkRetries.Inc()
		s.log.Debug("ingest_retry", "url", s.url, "attempt", attempt+1, "err", err)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(jitter(delay)):
		}
		delay = min(delay*2, maxBackoff)
	}
}

// post delivers one batch; only a 2xx answer counts.
func (s *Ingest) post(ctx context.Context, data []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "spyder/"+spyder.Version)
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
