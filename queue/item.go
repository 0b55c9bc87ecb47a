package queue

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/spyder-crawler/spyder/host"
)

// Item is one unit of work: a host to visit. Its JSON is byte-compatible with
// the items the older spyder queued in Redis (the list protocol described in
// package store/redisstore), {"host":"example.com","ts":1705312200,"attempt":0},
// and fields this version does not know are kept, in their order, after the
// known ones, so items written by newer or foreign producers survive a round
// trip through any backend.
type Item struct {
	Host    host.Name
	TS      int64 // Unix seconds when first enqueued
	Attempt int   // failed attempts so far

	// Extra holds unknown fields in input order.
	Extra []Field
}

// Field is one unknown JSON member of an [Item], its value kept verbatim.
type Field struct {
	Name  string
	Value json.RawMessage
}

// MarshalJSON encodes the item as host, ts, attempt, then any extra fields.
func (it Item) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"host":`)
	writeString(&b, string(it.Host))
	b.WriteString(`,"ts":`)
	b.WriteString(strconv.FormatInt(it.TS, 10))
	b.WriteString(`,"attempt":`)
	b.WriteString(strconv.Itoa(it.Attempt))
	for _, f := range it.Extra {
		b.WriteByte(',')
		writeString(&b, f.Name)
		b.WriteByte(':')
		if err := json.Compact(&b, f.Value); err != nil {
			return nil, fmt.Errorf("queue: item field %q: %w", f.Name, err)
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// Encode is MarshalJSON without the error for items built by this package's
// callers; it panics only if an Extra value is not valid JSON.
func (it Item) Encode() []byte {
	b, err := it.MarshalJSON()
	if err != nil {
		panic(err)
	}
	return b
}

func writeString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // strings always encode
	b.Truncate(b.Len() - 1)
}

// UnmarshalJSON decodes an item, checking types: host must be a non-empty
// string, ts an integer, attempt a non-negative integer. Unknown members are
// kept in Extra. The host is not normalised here; see [DecodeItem].
func (it *Item) UnmarshalJSON(data []byte) error {
	if fast, ok := decodeCanonical(data); ok {
		*it = fast
		return nil
	}
	return it.unmarshalGeneral(data)
}

// unmarshalGeneral is UnmarshalJSON for any input; decodeCanonical is its
// fast path for the bytes this package writes.
func (it *Item) unmarshalGeneral(data []byte) error {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(data, &members); err != nil {
		return fmt.Errorf("item is not a JSON object: %w", err)
	}
	if members == nil {
		return errors.New("item is null")
	}
	var out Item
	raw, ok := members["host"]
	if !ok {
		return errors.New(`item has no "host"`)
	}
	if err := json.Unmarshal(raw, &out.Host); err != nil || out.Host == "" {
		return fmt.Errorf(`item "host" must be a non-empty string, got %s`, clip(raw))
	}
	if raw, ok := members["ts"]; ok {
		if err := json.Unmarshal(raw, &out.TS); err != nil {
			return fmt.Errorf(`item "ts" must be an integer, got %s`, clip(raw))
		}
	}
	if raw, ok := members["attempt"]; ok {
		var a int64
		if err := json.Unmarshal(raw, &a); err != nil || a < 0 || a > math.MaxInt32 {
			return fmt.Errorf(`item "attempt" must be a non-negative integer, got %s`, clip(raw))
		}
		out.Attempt = int(a)
	}
	// Keep unknown members in input order: walk the tokens once more.
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil { // {
		return err
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		name := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		switch name {
		case "host", "ts", "attempt":
			continue
		}
		if seen[name] { // duplicate member: the last value wins, as in encoding/json
			for i := range out.Extra {
				if out.Extra[i].Name == name {
					out.Extra[i].Value = members[name]
				}
			}
			continue
		}
		seen[name] = true
		out.Extra = append(out.Extra, Field{Name: name, Value: members[name]})
	}
	*it = out
	return nil
}

// DecodeItem decodes stored item bytes and normalises the host, so an item
// pushed by hand as "Example.COM." is leased as "example.com". The error says
// what is wrong with the bytes; callers send such items to dead.
func DecodeItem(raw []byte) (Item, error) {
	it, ok := decodeCanonical(raw)
	if !ok {
		if err := it.unmarshalGeneral(raw); err != nil {
			return Item{}, err
		}
	}
	h, err := host.Parse(string(it.Host))
	if err != nil {
		return Item{}, fmt.Errorf("item host: %w", err)
	}
	it.Host = h
	return it, nil
}

// decodeCanonical decodes exactly the form MarshalJSON writes for an item
// without extra fields, {"host":"a.com","ts":1,"attempt":0}, when the host
// needs no escaping. Anything else reports !ok and takes the general path,
// which gives the same result for these bytes (checked by a fuzz test).
func decodeCanonical(b []byte) (Item, bool) {
	const pre, mid, end = `{"host":"`, `","ts":`, `,"attempt":`
	var it Item
	if !bytes.HasPrefix(b, []byte(pre)) || len(b) < len(pre)+len(mid)+len(end)+4 || b[len(b)-1] != '}' {
		return it, false
	}
	b = b[len(pre) : len(b)-1]
	i := bytes.IndexByte(b, '"')
	if i <= 0 {
		return it, false
	}
	for _, c := range b[:i] {
		if c < 0x20 || c == '\\' || c >= 0x80 {
			return it, false
		}
	}
	it.Host = host.Name(b[:i])
	b = b[i:]
	if !bytes.HasPrefix(b, []byte(mid)) {
		return it, false
	}
	b = b[len(mid):]
	j := bytes.IndexByte(b, ',')
	if j < 0 {
		return it, false
	}
	ts, ok := parseInt(b[:j], true)
	if !ok {
		return it, false
	}
	it.TS = ts
	b = b[j:]
	if !bytes.HasPrefix(b, []byte(end)) {
		return it, false
	}
	a, ok := parseInt(b[len(end):], false)
	if !ok || a > math.MaxInt32 {
		return it, false
	}
	it.Attempt = int(a)
	return it, true
}

// parseInt parses a JSON integer in canonical form (no leading zeros, no
// plus sign, at most 18 digits so it cannot overflow).
func parseInt(b []byte, signed bool) (int64, bool) {
	neg := false
	if signed && len(b) > 0 && b[0] == '-' {
		neg, b = true, b[1:]
	}
	if len(b) == 0 || len(b) > 18 || (b[0] == '0' && len(b) > 1) {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		if n == 0 {
			return 0, false
		}
		n = -n
	}
	return n, true
}

func clip(b []byte) string {
	const max = 64
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}
