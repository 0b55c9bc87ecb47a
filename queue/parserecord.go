package queue

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spyder-crawler/spyder/host"
)

// exportLine is the JSON shape of one export line; pointers tell a missing
// member from a zero one.
type exportLine struct {
	Kind      string          `json:"kind"`
	Item      json.RawMessage `json:"item"`
	Raw       *string         `json:"raw"`
	RawBase64 *string         `json:"raw_base64"`
	Lease     *string         `json:"lease"`
	Deadline  *int64          `json:"deadline"`
	Error     *string         `json:"error"`
	At        *int64          `json:"at"`
	Host      *string         `json:"host"`
	Outcome   *string         `json:"outcome"`
}

// ParseRecord decodes and validates one export line. Hosts are normalised
// (and rejected with the reason when invalid); fields that do not belong to
// the line's kind are errors, so that nothing in the file is silently
// dropped.
func ParseRecord(line []byte) (Record, error) {
	var l exportLine
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return Record{}, fmt.Errorf("not a record: %w", err)
	}
	if dec.More() {
		return Record{}, errors.New("not a record: text after the JSON object")
	}
	rec := Record{Kind: l.Kind}
	var allowed []string
	switch l.Kind {
	case KindPending, KindDead:
		allowed = []string{"item", "raw", "raw_base64"}
		if l.Kind == KindDead {
			allowed = append(allowed, "error", "at")
			if l.Error == nil || l.At == nil {
				return Record{}, errors.New(`dead record needs "error" and "at"`)
			}
			rec.Error, rec.At = *l.Error, *l.At
		}
		var err error
		switch {
		case countSet(l.Item != nil, l.Raw != nil, l.RawBase64 != nil) != 1:
			return Record{}, fmt.Errorf(`%s record needs exactly one of "item", "raw", "raw_base64"`, l.Kind)
		case l.Item != nil:
			rec.Item, err = decodeRecordItem(l.Item)
		case l.Raw != nil:
			rec.Raw = []byte(*l.Raw)
		default:
			rec.Raw, err = base64.StdEncoding.DecodeString(*l.RawBase64)
		}
		if err != nil {
			return Record{}, err
		}
	case KindProcessing:
		allowed = []string{"item", "lease", "deadline"}
		if l.Item == nil || l.Lease == nil || l.Deadline == nil {
			return Record{}, errors.New(`processing record needs "item", "lease" and "deadline"`)
		}
		if *l.Lease == "" {
			return Record{}, errors.New(`processing record has an empty "lease"`)
		}
		if *l.Deadline <= 0 {
			return Record{}, fmt.Errorf(`processing record "deadline" %d is not Unix milliseconds`, *l.Deadline)
		}
		it, err := decodeRecordItem(l.Item)
		if err != nil {
			return Record{}, err
		}
		rec.Item, rec.LeaseID = it, *l.Lease
		rec.Deadline = time.UnixMilli(*l.Deadline)
	case KindSeen:
		allowed = []string{"host", "at", "outcome"}
		if l.Host == nil {
			return Record{}, errors.New(`seen record needs "host"`)
		}
		h, err := host.Parse(*l.Host)
		if err != nil {
			return Record{}, err
		}
		rec.Host = h
		if rec.At, rec.Outcome, err = lastProbe(l); err != nil {
			return Record{}, err
		}
	case "":
		return Record{}, errors.New(`record has no "kind"`)
	default:
		return Record{}, fmt.Errorf("unknown record kind %q", l.Kind)
	}
	if f := extraField(l, allowed); f != "" {
		return Record{}, fmt.Errorf("%s record cannot have %q", l.Kind, f)
	}
	return rec, nil
}

// lastProbe reads a seen record's optional last visit: "at" and "outcome"
// together, or neither.
func lastProbe(l exportLine) (int64, string, error) {
	switch {
	case (l.At == nil) != (l.Outcome == nil):
		return 0, "", errors.New(`seen record needs both "at" and "outcome" (a last probe), or neither`)
	case l.Outcome == nil:
		return 0, "", nil
	}
	if err := CheckOutcome(*l.Outcome); err != nil {
		return 0, "", err
	}
	return *l.At, *l.Outcome, nil
}

func decodeRecordItem(raw json.RawMessage) (*Item, error) {
	it, err := DecodeItem(raw)
	if err != nil {
		return nil, err
	}
	return &it, nil
}

// extraField names the first member of l set but not allowed for its kind.
func extraField(l exportLine, allowed []string) string {
	set := []struct {
		name string
		ok   bool
	}{
		{"item", l.Item != nil}, {"raw", l.Raw != nil}, {"raw_base64", l.RawBase64 != nil},
		{"lease", l.Lease != nil}, {"deadline", l.Deadline != nil}, {"error", l.Error != nil},
		{"at", l.At != nil}, {"host", l.Host != nil}, {"outcome", l.Outcome != nil},
	}
	for _, f := range set {
		if !f.ok {
			continue
		}
		found := false
		for _, a := range allowed {
			found = found || a == f.name
		}
		if !found {
			return f.name
		}
	}
	return ""
}

func countSet(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}
