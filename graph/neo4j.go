package graph

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spyder-crawler/spyder"
)

// Neo4jFiles are the files ExportNeo4j writes, each with the header
// `neo4j-admin database import` reads. Node IDs live in one ID space per
// node type (Domain, IP, Certificate), so relationships are split by the
// type of their end. TXT records are joined by newlines (hence
// --multiline-fields), SANs are a string array (';' between elements, the
// importer's default).
var Neo4jFiles = []struct {
	Name   string
	Header []string
}{
	{"domains.csv", []string{"host:ID(Domain)", ":LABEL", "apex", "first_seen:long", "last_seen:long", "txt"}},
	{"ips.csv", []string{"ip:ID(IP)", ":LABEL", "first_seen:long", "last_seen:long"}},
	{"certs.csv", []string{"spki_sha256:ID(Certificate)", ":LABEL", "subject_cn", "issuer_cn", "not_before:long", "not_after:long", "sans:string[]", "verified:boolean"}},
	{"rels_domain.csv", []string{":START_ID(Domain)", ":END_ID(Domain)", ":TYPE", "observed_at:long", "probe_id", "run_id"}},
	{"rels_ip.csv", []string{":START_ID(Domain)", ":END_ID(IP)", ":TYPE", "observed_at:long", "probe_id", "run_id"}},
	{"rels_cert.csv", []string{":START_ID(Domain)", ":END_ID(Certificate)", ":TYPE", "observed_at:long", "probe_id", "run_id"}},
	{"ases.csv", []string{"as:ID(AS)", ":LABEL"}},
	{"rels_as.csv", []string{":START_ID(IP)", ":END_ID(AS)", ":TYPE", "observed_at:long", "probe_id", "run_id"}},
}

// neo4jRels is the relationship file of each target node type.
var neo4jRels = map[string]string{TypeDomain: "rels_domain.csv", TypeIP: "rels_ip.csv", TypeCert: "rels_cert.csv", TypeAS: "rels_as.csv"}

// neo4jLabels are the node labels by node type.
var neo4jLabels = map[string]string{TypeDomain: "Domain", TypeIP: "IP", TypeCert: "Certificate", TypeAS: "AS"}

type neo4j struct {
	noOutcomes
	files []*os.File
	bufs  []*bufio.Writer
	csvs  map[string]*csv.Writer // file name → writer
}

// ExportNeo4j reads names and writes the Neo4j import files into dir
// (created if needed; files of the same names are replaced). It returns
// the command that imports them into database db.
func ExportNeo4j(r *Reader, names []string, dir, db string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("neo4j export: %w", err)
	}
	x := &neo4j{csvs: map[string]*csv.Writer{}}
	defer func() {
		for _, f := range x.files {
			f.Close()
		}
	}()
	for _, nf := range Neo4jFiles {
		f, err := os.Create(filepath.Join(dir, nf.Name))
		if err != nil {
			return "", fmt.Errorf("neo4j export: %w", err)
		}
		bw := bufio.NewWriterSize(f, 256<<10)
		c := csv.NewWriter(bw)
		c.Write(nf.Header)
		x.files, x.bufs, x.csvs[nf.Name] = append(x.files, f), append(x.bufs, bw), c
	}
	if err := walk(r, names, x); err != nil {
		return "", err
	}
	for i, nf := range Neo4jFiles {
		c := x.csvs[nf.Name]
		c.Flush()
		if err := c.Error(); err != nil {
			return "", fmt.Errorf("neo4j export: %s: %w", nf.Name, err)
		}
		if err := x.bufs[i].Flush(); err != nil {
			return "", fmt.Errorf("neo4j export: %s: %w", nf.Name, err)
		}
		if err := x.files[i].Close(); err != nil {
			return "", fmt.Errorf("neo4j export: %s: %w", nf.Name, err)
		}
	}
	x.files = nil
	return neo4jCommand(dir, db), nil
}

func neo4jCommand(dir, db string) string {
	var b strings.Builder
	b.WriteString("neo4j-admin database import full --multiline-fields=true")
	for _, nf := range Neo4jFiles {
		kind := "--nodes="
		if strings.HasPrefix(nf.Name, "rels_") {
			kind = "--relationships="
		}
		b.WriteString(" " + kind + shellQuote(filepath.Join(dir, nf.Name)))
	}
	b.WriteString(" " + shellQuote(db))
	return b.String()
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func (x *neo4j) node(n Node) error {
	label := neo4jLabels[n.Type]
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	switch n.Type {
	case TypeDomain:
		row := []string{n.ID, label, "", "", "", ""}
		if d := n.Domain; d != nil {
			row = []string{n.ID, label, string(d.Apex), i64(d.FirstSeen), i64(d.LastSeen), strings.Join(d.TXT, "\n")}
		}
		return x.csvs["domains.csv"].Write(row)
	case TypeIP:
		row := []string{n.ID, label, "", ""}
		if ip := n.IP; ip != nil {
			row = []string{n.ID, label, i64(ip.FirstSeen), i64(ip.LastSeen)}
		}
		return x.csvs["ips.csv"].Write(row)
	case TypeAS:
		return x.csvs["ases.csv"].Write([]string{n.ID, label})
	default:
		row := []string{n.ID, label, "", "", "", "", "", ""}
		if c := n.Cert; c != nil {
			row = []string{n.ID, label, c.SubjectCN, c.IssuerCN, i64(c.NotBefore), i64(c.NotAfter),
				strings.Join(c.SANs, ";"), strconv.FormatBool(c.Verified)}
		}
		return x.csvs["certs.csv"].Write(row)
	}
}

func (x *neo4j) edge(e *spyder.Edge) error {
	return x.csvs[neo4jRels[TargetType(e.Type)]].Write([]string{e.Source, e.Target, e.Type, strconv.FormatInt(e.ObservedAt, 10), e.ProbeID, e.RunID})
}
