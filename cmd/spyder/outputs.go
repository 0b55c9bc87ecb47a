package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/spyder-crawler/spyder/metrics"
	"github.com/spyder-crawler/spyder/sink"
	"github.com/spyder-crawler/spyder/store"
	"github.com/spyder-crawler/spyder/store/boltstore"
)

// outputs is the sink a run writes to, and how to close it.
type outputs struct {
	sink    sink.Sink
	closes  []func() error
	spooled int // batches an earlier run left for --ingest, replayed by this one
}

// Close closes every output, last opened first.
func (o *outputs) Close() error {
	var errs []error
	for i := len(o.closes) - 1; i >= 0; i-- {
		errs = append(errs, o.closes[i]())
	}
	o.closes = nil
	return errors.Join(errs...)
}

// openOutputs builds the sinks the flags ask for: --out or stdout, and
// --ingest, whose undelivered batches wait in b's spool.
func openOutputs(ctx context.Context, cfg runConfig, stdout io.Writer, b store.Backend, local *boltstore.Local, log *slog.Logger, m *metrics.Set) (*outputs, error) {
	o := &outputs{}
	var sinks sink.Tee
	switch path := cfg.out; {
	case cfg.format == sink.FormatParquet:
		p, err := sink.OpenParquet(path, sink.ParquetConfig{ProbeID: cfg.crawl.ProbeID, RunID: cfg.crawl.RunID}, log)
		if err != nil {
			return nil, fmt.Errorf("--out %w", err)
		}
		sinks = append(sinks, p)
		o.closes = append(o.closes, func() error {
			if err := p.Close(); err != nil {
				return fmt.Errorf("--out %w", err)
			}
			return nil
		})
	case path != "" && path != "-":
		s, closeFile, err := sink.OpenFile(path, cfg.format, log)
		if err != nil {
			return nil, fmt.Errorf("--out %w", err)
		}
		sinks = append(sinks, s)
		o.closes = append(o.closes, func() error {
			if err := closeFile(); err != nil {
				return fmt.Errorf("--out %w", err)
			}
			return nil
		})
	case cfg.ingest == "" || path == "-":
		s, err := sink.NewJSONSink(stdout, cfg.format)
		if err != nil {
			return nil, usagef("--format: %v", err)
		}
		sinks = append(sinks, s)
	}
	if cfg.ingest != "" {
		s, spooled, err := openIngest(ctx, cfg, b, local, log, m)
		if err != nil {
			o.Close()
			return nil, err
		}
		o.spooled = spooled
		sinks = append(sinks, s)
		o.closes = append(o.closes, s.Close)
	}
	o.sink = sinks
	if len(sinks) == 1 {
		o.sink = sinks[0]
	}
	return o, nil
}

// openIngest returns the --ingest sink over its spool (see ingestSpool),
// saying whether an earlier run left batches in it to replay, and
// returning how many.
func openIngest(ctx context.Context, cfg runConfig, b store.Backend, local *boltstore.Local, log *slog.Logger, m *metrics.Set) (*sink.Ingest, int, error) {
	sp, err := ingestSpool(ctx, b, local, log)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", b.Name(), err)
	}
	n, err := sp.Len(ctx)
	if err == nil {
		m.SpoolDepth.Set(float64(n))
		if n > 0 {
			log.Info("ingest_spool", "batches", n, "note", "replaying batches spooled by an earlier run")
		}
	}
	return sink.NewIngest(cfg.ingest, cfg.ingestWait, cfg.ingestTries, sp, log, m), n, nil
}
