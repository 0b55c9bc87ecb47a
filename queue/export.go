package queue

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"
)

// The export format is JSON lines, one [Record] per line, in [Queue.Dump]
// order (pending oldest first, then processing, dead, seen):
//
//	{"kind":"pending","item":{"host":"a.com","ts":1705312200,"attempt":0}}
//	{"kind":"processing","item":{...},"lease":"ID","deadline":1705312320000}
//	{"kind":"dead","item":{...},"error":"tls: timeout","at":1705312200}
//	{"kind":"dead","raw":"not json","error":"item is not a JSON object: …","at":1705312200}
//	{"kind":"seen","host":"a.com"}
//	{"kind":"seen","host":"b.com","at":1705312200,"outcome":"timeout"}
//
// "item" is the item in its canonical encoding, [Item.MarshalJSON]: host,
// ts, attempt, then unknown fields in their original order, compacted. That
// is also the form every backend stores, so an exported file imported and
// exported again is byte-identical (an item pushed by hand with other
// spacing comes out canonical). "deadline" is Unix milliseconds, "at" Unix
// seconds. Bytes that are not an item are kept as "raw", a JSON string, or
// as "raw_base64" when they are not valid UTF-8; pending records may be raw
// too (an undecodable item pushed by hand, sent to dead when leased).

// Export writes every record of q to w as JSON lines (see the format above).
// It reads a consistent snapshot when the backend's Dump does.
func Export(ctx context.Context, q Queue, w io.Writer) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	var buf bytes.Buffer
	err := q.Dump(ctx, func(r Record) error {
		buf.Reset()
		if err := appendRecord(&buf, r); err != nil {
			return err
		}
		_, err := bw.Write(buf.Bytes())
		return err
	})
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// appendRecord writes r as one line, newline included.
func appendRecord(b *bytes.Buffer, r Record) error {
	b.WriteString(`{"kind":`)
	writeString(b, r.Kind)
	switch r.Kind {
	case KindPending, KindProcessing, KindDead:
		switch {
		case r.Item != nil:
			item, err := r.Item.MarshalJSON()
			if err != nil {
				return err
			}
			b.WriteString(`,"item":`)
			b.Write(item)
		case r.Kind == KindProcessing:
			return fmt.Errorf("processing record %q has no item", r.LeaseID)
		case utf8.Valid(r.Raw):
			b.WriteString(`,"raw":`)
			writeString(b, string(r.Raw))
		default:
			b.WriteString(`,"raw_base64":"`)
			b.WriteString(base64.StdEncoding.EncodeToString(r.Raw))
			b.WriteByte('"')
		}
		switch r.Kind {
		case KindProcessing:
			b.WriteString(`,"lease":`)
			writeString(b, r.LeaseID)
			b.WriteString(`,"deadline":`)
			b.WriteString(strconv.FormatInt(r.Deadline.UnixMilli(), 10))
		case KindDead:
			b.WriteString(`,"error":`)
			writeString(b, r.Error)
			b.WriteString(`,"at":`)
			b.WriteString(strconv.FormatInt(r.At, 10))
		}
	case KindSeen:
		b.WriteString(`,"host":`)
		writeString(b, string(r.Host))
		if r.Outcome != "" { // a done host's last visit
			b.WriteString(`,"at":`)
			b.WriteString(strconv.FormatInt(r.At, 10))
			b.WriteString(`,"outcome":`)
			writeString(b, r.Outcome)
		}
	default:
		return fmt.Errorf("unknown record kind %q", r.Kind)
	}
	b.WriteString("}\n")
	return nil
}
