// Package tablestest checks Parquet tables against the JSON output of the
// same crawl, reading both with DuckDB.
package tablestest

import (
	"fmt"
	"testing"

	"github.com/spyder-crawler/spyder/internal/duckdbtest"
	"github.com/spyder-crawler/spyder/tables"
)

// AgreeSQL selects, per table, the same rows from the lines file (view j)
// and from the Parquet tables (views over dir), canonically.
var AgreeSQL = map[string][2]string{
	tables.Domains: {
		`SELECT json->>'host', json->>'apex', (json->>'first_seen')::BIGINT, (json->>'last_seen')::BIGINT, coalesce((json->'txt')::VARCHAR[], []), json->>'batch_id' FROM j WHERE json->>'kind' = 'domain'`,
		`SELECT host, apex, epoch(first_seen)::BIGINT, epoch(last_seen)::BIGINT, coalesce(txt, []), batch_id FROM domains`},
	tables.IPs: {
		`SELECT json->>'ip', (json->>'first_seen')::BIGINT, (json->>'last_seen')::BIGINT, (json->>'asn')::BIGINT, json->>'as_org', json->>'prefix', json->>'batch_id' FROM j WHERE json->>'kind' = 'ip'`,
		`SELECT ip, epoch(first_seen)::BIGINT, epoch(last_seen)::BIGINT, asn::BIGINT, as_org, prefix, batch_id FROM ips`},
	tables.Certs: {
		`SELECT json->>'spki_sha256', json->>'subject_cn', json->>'issuer_cn', (json->>'not_before')::BIGINT, (json->>'not_after')::BIGINT, coalesce((json->'sans')::VARCHAR[], []), (json->>'verified')::BOOLEAN, json->>'batch_id' FROM j WHERE json->>'kind' = 'cert'`,
		`SELECT spki_sha256, subject_cn, issuer_cn, epoch(not_before)::BIGINT, epoch(not_after)::BIGINT, coalesce(sans, []), verified, batch_id FROM certs`},
	tables.Edges: {
		`SELECT json->>'type', json->>'source', json->>'target', (json->>'observed_at')::BIGINT, json->>'probe_id', json->>'run_id', json->>'batch_id' FROM j WHERE json->>'kind' = 'edge'`,
		`SELECT type, source, target, epoch(observed_at)::BIGINT, probe_id, run_id, batch_id FROM edges`},
	tables.Probes: {
		`SELECT json->>'host', json->>'batch_id', s.i, s.v->>'step', s.v->>'status', coalesce(s.v->>'detail', ''), coalesce(list_transform(from_json(s.v->'resolvers', '[{"server":"VARCHAR","answers":"UBIGINT","timeouts":"UBIGINT","errors":"UBIGINT","servfail":"UBIGINT","refused":"UBIGINT","truncated":"UBIGINT"}]'), x -> {'server': x.server, 'answers': coalesce(x.answers, 0), 'timeouts': coalesce(x.timeouts, 0), 'errors': coalesce(x.errors, 0), 'servfail': coalesce(x.servfail, 0), 'refused': coalesce(x.refused, 0), 'truncated': coalesce(x.truncated, 0)})::VARCHAR, '[]') FROM j, LATERAL (SELECT unnest(range(json_array_length(json->'steps')::BIGINT)) AS i) r, LATERAL (SELECT r.i AS i, json->'steps'->(r.i::INT) AS v) s WHERE json->>'kind' = 'probe'`,
		`SELECT host, batch_id, s.i - 1, s.v.step, s.v.status, coalesce(s.v.detail, ''), coalesce(s.v.resolvers::VARCHAR, '[]') FROM probes, LATERAL (SELECT unnest(range(1, len(steps) + 1)) AS i) r, LATERAL (SELECT r.i AS i, steps[r.i] AS v) s`},
}

// Views reads the lines file as JSON objects (j) and each table of dir.
func Views(lines, dir string) []string {
	v := []string{fmt.Sprintf(`CREATE VIEW j AS SELECT json FROM read_ndjson_objects('%s')`, lines)}
	for _, t := range tables.Names {
		v = append(v, fmt.Sprintf(`CREATE VIEW %s AS SELECT * FROM read_parquet('%s/%s/*.parquet')`, t, dir, t))
	}
	return v
}

// CheckAgree has DuckDB compare every table of the Parquet under dir with
// the lines file: as many rows, and none in one that is not in the other.
func CheckAgree(t testing.TB, lines, dir string) {
	t.Helper()
	stmts := Views(lines, dir)
	setup := len(stmts)
	for _, tab := range tables.Names {
		q := AgreeSQL[tab]
		stmts = append(stmts, fmt.Sprintf(`SELECT (SELECT count(*) FROM (%s)) AS json, (SELECT count(*) FROM (%s)) AS parquet`, q[0], q[1]),
			fmt.Sprintf(`(%s EXCEPT ALL %s) UNION ALL (%s EXCEPT ALL %s) LIMIT 5`, q[0], q[1], q[1], q[0]))
	}
	res := duckdbtest.Each(t, stmts...)[setup:]
	for i, tab := range tables.Names {
		counts, diff := res[2*i][0], res[2*i+1]
		nj, np := duckdbtest.Int(t, counts["json"]), duckdbtest.Int(t, counts["parquet"])
		if nj != np || nj == 0 {
			t.Errorf("%s: %d Parquet rows, %d JSON rows", tab, np, nj)
		}
		if len(diff) > 0 {
			t.Errorf("%s: rows in only one of JSON and Parquet: %v", tab, diff)
		}
	}
}
