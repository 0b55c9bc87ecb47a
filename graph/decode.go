package graph

import (
	"errors"
	"io"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/spyder-crawler/spyder"
)

// decoded is what one line gave: a record, or the problem that made it
// unusable.
type decoded struct {
	line   int
	rec    *record
	format format
	kind   Kind   // set when the line is bad
	msg    string // the problem, for the report
}

// jsonOptions decode leniently where spyder's own output could differ from
// strict JSON: invalid UTF-8 in a TXT record, a repeated key.
var jsonOptions = json.JoinOptions(jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))

// decodeLine decodes one non-empty line.
func decodeLine(n int, line []byte) decoded {
	d := decoded{line: n}
	var rec record
	if err := json.Unmarshal(line, &rec, jsonOptions); err != nil {
		var se *jsontext.SyntacticError
		switch {
		case line[0] == '{' && errors.Is(err, io.ErrUnexpectedEOF):
			d.kind, d.msg = Truncated, "truncated JSON ("+strconv.Itoa(len(line))+" bytes)"
		case errors.As(err, &se) || errors.Is(err, io.ErrUnexpectedEOF):
			d.kind, d.msg = NotJSON, "not JSON: "+err.Error()
		default:
			d.kind, d.msg = NotRecord, "JSON but not a spyder record (not an object, or a field of the wrong type)"
		}
		return d
	}
	d.format = classify(&rec)
	var err error
	switch d.format {
	case formatNone:
		d.kind, d.msg = NotRecord, "JSON but not a spyder record (no batch_id, nodes or edges; no type, source and target; no kind; no host and steps)"
		return d
	case formatEdge:
		rec.Batch.Edges = []spyder.Edge{rec.edge()}
	case formatLines:
		err = rec.item(line)
	case formatHosts:
		var h spyder.HostRecord
		if err = json.Unmarshal(line, &h, jsonOptions); err == nil {
			rec.Batch = h.Batch()
		}
	}
	if err != nil {
		d.kind, d.msg = NotRecord, "JSON but not a spyder "+d.format.String()+" line: "+err.Error()
		return d
	}
	d.rec = &rec
	return d
}

func (rec *record) edge() spyder.Edge {
	return spyder.Edge{Type: rec.Type, Source: rec.Source, Target: rec.Target,
		ObservedAt: rec.ObservedAt, ProbeID: rec.ProbeID, RunID: rec.RunID}
}

// item makes rec, a line of the lines format, a batch holding its one node,
// edge or outcome (none for the batch line itself).
func (rec *record) item(line []byte) error {
	b := &rec.Batch
	switch rec.Kind {
	case "batch":
		return nil
	case "domain":
		return appendItem(&b.NodesDomain, line)
	case "ip":
		return appendItem(&b.NodesIP, line)
	case "cert":
		return appendItem(&b.NodesCert, line)
	case "edge":
		b.Edges = []spyder.Edge{rec.edge()}
		return nil
	case "probe":
		return appendItem(&b.Outcomes, line)
	}
	return errors.New("unknown kind " + strconv.Quote(rec.Kind))
}

func appendItem[T any](xs *[]T, line []byte) error {
	var x T
	if err := json.Unmarshal(line, &x, jsonOptions); err != nil {
		return err
	}
	*xs = append(*xs, x)
	return nil
}

func classify(rec *record) format {
	b := &rec.Batch
	switch {
	case rec.Kind != "" && b.BatchID != "":
		return formatLines
	case b.BatchID == "" && rec.Host != "" && rec.Steps != nil:
		return formatHosts
	}
	if b.BatchID != "" || b.NodesDomain != nil || b.NodesIP != nil || b.NodesCert != nil || b.Edges != nil || b.Outcomes != nil {
		return formatBatch
	}
	if rec.Type != "" && rec.Source != "" && rec.Target != "" {
		return formatEdge
	}
	return formatNone
}
