package redisstore

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"github.com/spyder-crawler/spyder/queue"
)

// A dead entry is a JSON object in the dead list:
//
//	{"item":{"host":"a.com","ts":1,"attempt":3},"error":"timeout","at":1705312200}
//
// "item" holds the item's bytes verbatim when they decode; bytes that do not
// are kept as a JSON string in "raw", or base64 in "raw_b64" when they are
// not UTF-8, so nothing is lost.
type deadJSON struct {
	Item   json.RawMessage `json:"item,omitempty"`
	Raw    *string         `json:"raw,omitempty"`
	RawB64 []byte          `json:"raw_b64,omitempty"`
	Error  string          `json:"error"`
	At     int64           `json:"at"`
}

// deadEntry builds a dead entry for raw, which decoded to it (or did not,
// when it is nil), dying now with reason.
func (s *Store) deadEntry(raw []byte, it *queue.Item, reason string) []byte {
	return encodeDead(raw, it != nil, reason, s.wallNow().Unix())
}

func encodeDead(raw []byte, decoded bool, reason string, at int64) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	switch {
	case decoded:
		b.WriteString(`"item":`)
		b.Write(raw)
	case utf8.Valid(raw):
		b.WriteString(`"raw":`)
		q, _ := json.Marshal(string(raw))
		b.Write(q)
	default:
		b.WriteString(`"raw_b64":"`)
		b.WriteString(base64.StdEncoding.EncodeToString(raw))
		b.WriteByte('"')
	}
	b.WriteString(`,"error":`)
	q, _ := json.Marshal(reason)
	b.Write(q)
	b.WriteString(`,"at":`)
	b.WriteString(strconv.FormatInt(at, 10))
	b.WriteByte('}')
	return b.Bytes()
}

// decodeDead reads a dead entry. An entry that is not one (pushed by hand)
// comes back whole as Raw, with an error saying so.
func decodeDead(entry []byte) queue.DeadItem {
	var d deadJSON
	if err := json.Unmarshal(entry, &d); err != nil || d.Item == nil && d.Raw == nil && d.RawB64 == nil ||
		d.Item != nil && (len(d.Item) == 0 || d.Item[0] != '{') {
		return queue.DeadItem{Raw: entry, Error: "not a spyder dead entry"}
	}
	out := queue.DeadItem{Error: d.Error, At: d.At}
	switch {
	case d.Item != nil:
		out.Raw = d.Item
		if it, err := queue.DecodeItem(d.Item); err == nil {
			out.Item = &it
		}
	case d.Raw != nil:
		out.Raw = []byte(*d.Raw)
	default:
		out.Raw = d.RawB64
	}
	return out
}

// Dead implements [queue.Queue].
func (s *Store) Dead(ctx context.Context, limit int) ([]queue.DeadItem, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	stop := int64(limit) - 1
	if limit <= 0 {
		stop = -1
	}
	entries, err := s.c.LRange(ctx, s.k.dead, 0, stop).Result()
	if err != nil {
		return nil, s.interpret(ctx, "dead", err)
	}
	out := make([]queue.DeadItem, len(entries))
	for i, e := range entries {
		out[i] = decodeDead([]byte(e))
	}
	return out, nil
}

//go:embed retrydead.lua
var retryDeadLua string

var retryDeadScript = redis.NewScript(bucketsLua + retryDeadLua)

// RetryDead implements [queue.Queue]. Items go to the back of the line,
// oldest dead first. Bytes that never decoded go back as they are (and will
// die again unless fixed).
func (s *Store) RetryDead(ctx context.Context, limit int) (int, error) {
	if err := s.check(ctx); err != nil {
		return 0, err
	}
	moved := 0
	for limit <= 0 || moved < limit {
		n := int64(maxBatch)
		if limit > 0 {
			n = min(n, int64(limit-moved))
		}
		entries, err := s.c.LRange(ctx, s.k.dead, 0, n-1).Result()
		if err != nil {
			return moved, s.interpret(ctx, "retry dead", err)
		}
		if len(entries) == 0 {
			return moved, nil
		}
		args := make([]any, 0, 3*len(entries))
		for _, e := range entries {
			d := decodeDead([]byte(e))
			payload, h := d.Raw, ""
			if d.Item != nil {
				it := *d.Item
				it.Attempt = 0
				payload, h = it.Encode(), string(it.Host)
			}
			args = append(args, e, payload, h)
		}
		v, err := s.run(ctx, "retry dead", retryDeadScript, []string{s.k.dead, s.k.pending, s.k.hostsMeta}, args...)
		if err != nil {
			return moved, err
		}
		moved += int(toInt64(v))
		if toInt64(v) == 0 {
			return moved, nil // raced with another caller; let it finish
		}
	}
	return moved, nil
}

//go:embed purgedead.lua
var purgeDeadLua string

var purgeDeadScript = redis.NewScript(purgeDeadLua)

// PurgeDead implements [queue.Queue].
func (s *Store) PurgeDead(ctx context.Context) (int, error) {
	v, err := s.run(ctx, "purge dead", purgeDeadScript, []string{s.k.dead})
	if err != nil {
		return 0, err
	}
	return int(toInt64(v)), nil
}

// clip shortens b for a message.
func clip(b []byte) string {
	const max = 64
	if len(b) > max {
		return fmt.Sprintf("%q…", b[:max])
	}
	return fmt.Sprintf("%q", b)
}
