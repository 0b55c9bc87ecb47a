package sink

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spyder-crawler/spyder"
)

// Kinds of line in [FormatLines]: the value of each line's "kind" field.
const (
	KindBatch   = "batch"  // the batch itself: probe_id, run_id, timestamp
	KindDomain  = "domain" // a [spyder.DomainNode]
	KindIP      = "ip"     // a [spyder.IPNode]
	KindCert    = "cert"   // a [spyder.CertNode]
	KindEdge    = "edge"   // a [spyder.Edge]
	KindOutcome = "probe"  // a [spyder.HostOutcome]
)

// lineHead starts every line of [FormatLines]: what the line holds and
// the batch it came from, so a reader can group lines back into batches.
type lineHead struct {
	Kind    string `json:"kind"`
	BatchID string `json:"batch_id"`
}

type batchLine struct {
	lineHead
	ProbeID   string `json:"probe_id"`
	RunID     string `json:"run_id"`
	Timestamp int64  `json:"timestamp"`
}

// The item lines embed their item, so its fields sit beside kind and
// batch_id in one flat object.
type (
	domainLine struct {
		lineHead
		spyder.DomainNode
	}
	ipLine struct {
		lineHead
		spyder.IPNode
	}
	certLine struct {
		lineHead
		spyder.CertNode
	}
	edgeLine struct {
		lineHead
		spyder.Edge
	}
	probeLine struct {
		lineHead
		spyder.HostOutcome
	}
)

// encodeLines writes b as [FormatLines]: one batch line, then one line per
// domain, IP and certificate node, edge and host outcome, in that order.
func encodeLines(enc *json.Encoder, b *spyder.Batch) error {
	head := func(kind string) lineHead { return lineHead{Kind: kind, BatchID: b.BatchID} }
	lines := []any{batchLine{head(KindBatch), b.ProbeID, b.RunID, b.Timestamp}}
	for _, n := range b.NodesDomain {
		lines = append(lines, domainLine{head(KindDomain), n})
	}
	for _, n := range b.NodesIP {
		lines = append(lines, ipLine{head(KindIP), n})
	}
	for _, n := range b.NodesCert {
		lines = append(lines, certLine{head(KindCert), n})
	}
	for _, e := range b.Edges {
		lines = append(lines, edgeLine{head(KindEdge), e})
	}
	for _, p := range b.Outcomes {
		lines = append(lines, probeLine{head(KindOutcome), p})
	}
	for _, l := range lines {
		if err := enc.Encode(l); err != nil {
			return fmt.Errorf("encode line: %w", err)
		}
	}
	return nil
}

// DecodeLines reads [FormatLines] from r and groups the lines back into
// batches, in the order their batch lines came. A line that is not JSON,
// has an unknown kind, or names a batch whose batch line has not come
// yet is an error naming its line number.
func DecodeLines(r io.Reader) ([]spyder.Batch, error) {
	var out []spyder.Batch
	index := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 64<<20)
	for n := 1; sc.Scan(); n++ {
		var h lineHead
		if err := json.Unmarshal(sc.Bytes(), &h); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if h.Kind == KindBatch {
			var b spyder.Batch
			if err := json.Unmarshal(sc.Bytes(), &b); err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			index[h.BatchID] = len(out)
			out = append(out, b)
			continue
		}
		i, ok := index[h.BatchID]
		if !ok {
			return nil, fmt.Errorf("line %d: %s line of batch %q before its batch line", n, h.Kind, h.BatchID)
		}
		if err := decodeItem(&out[i], h.Kind, sc.Bytes()); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// decodeItem appends the item a line of kind holds to b.
func decodeItem(b *spyder.Batch, kind string, line []byte) error {
	var err error
	switch kind {
	case KindDomain:
		b.NodesDomain, err = appendJSON(b.NodesDomain, line)
	case KindIP:
		b.NodesIP, err = appendJSON(b.NodesIP, line)
	case KindCert:
		b.NodesCert, err = appendJSON(b.NodesCert, line)
	case KindEdge:
		b.Edges, err = appendJSON(b.Edges, line)
	case KindOutcome:
		b.Outcomes, err = appendJSON(b.Outcomes, line)
	default:
		return fmt.Errorf("unknown kind %q", kind)
	}
	return err
}

func appendJSON[T any](xs []T, line []byte) ([]T, error) {
	var x T
	if err := json.Unmarshal(line, &x); err != nil {
		return xs, err
	}
	return append(xs, x), nil
}
