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
			d.kind, d.msg = NotRecord, "JSON but not a spyder batch or edge (not an object, or a field of the wrong type)"
		}
		return d
	}
	if rec.Kind != "" {
		return decodeItemLine(d, &rec, line)
	}
	d.format = classify(&rec)
	if d.format == formatNone {
		d.kind, d.msg = NotRecord, "JSON but not a spyder batch or edge (no batch_id, nodes or edges; no type, source and target)"
		return d
	}
	if d.format == formatEdge {
		rec.Batch.Edges = []spyder.Edge{{Type: rec.Type, Source: rec.Source, Target: rec.Target,
			ObservedAt: rec.ObservedAt, ProbeID: rec.ProbeID, RunID: rec.RunID}}
	}
	d.rec = &rec
	return d
}

func classify(rec *record) format {
	b := &rec.Batch
	if b.BatchID != "" || b.NodesDomain != nil || b.NodesIP != nil || b.NodesCert != nil || b.Edges != nil || b.Outcomes != nil {
		return formatBatch
	}
	if rec.Type != "" && rec.Source != "" && rec.Target != "" {
		return formatEdge
	}
	return formatNone
}

// decodeItemLine decodes a line of the lines format: a batch line (its
// header only) or one node, edge or probe outcome, which comes as a batch
// holding that one item. The reader gives the item its batch's probe, run
// and time from the batch line before it.
func decodeItemLine(d decoded, rec *record, line []byte) decoded {
	b := &rec.Batch
	var err error
	switch rec.Kind {
	case "batch":
	case "domain":
		b.NodesDomain = make([]spyder.DomainNode, 1)
		err = json.Unmarshal(line, &b.NodesDomain[0], jsonOptions)
	case "ip":
		b.NodesIP = make([]spyder.IPNode, 1)
		err = json.Unmarshal(line, &b.NodesIP[0], jsonOptions)
	case "cert":
		b.NodesCert = make([]spyder.CertNode, 1)
		err = json.Unmarshal(line, &b.NodesCert[0], jsonOptions)
	case "edge":
		b.Edges = make([]spyder.Edge, 1)
		err = json.Unmarshal(line, &b.Edges[0], jsonOptions)
	case "probe":
		b.Outcomes = make([]spyder.HostOutcome, 1)
		err = json.Unmarshal(line, &b.Outcomes[0], jsonOptions)
	default:
		d.kind, d.msg = NotRecord, "a lines-format line of unknown kind "+strconv.Quote(rec.Kind)
		return d
	}
	if err != nil {
		d.kind, d.msg = NotRecord, "a lines-format "+rec.Kind+" line with a field of the wrong type"
		return d
	}
	d.format, d.rec = formatLines, rec
	return d
}
