package postgres_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/laurel/laurel/laureltest"
	"github.com/laurel/laurel/postgres"
)

// TestKeyLookupPlans: each statement by which a write finds its rows by key probes the
// table's index per key, whatever PostgreSQL knows of the table — nothing while the board is
// new, stale figures once it has grown, or fresh ones — and whether the plan is made for the
// arguments or kept for every run of the prepared statement (a generic plan). A plan that
// scans the board's rows makes every write cost the size of its board.
func TestKeyLookupPlans(t *testing.T) {
	s := laureltest.NewScaleOutStore(t)
	clock := laureltest.NewClock("2026-11-22T10:00:00Z")
	s.Open(t, clock.Now) // makes the tables
	conn, err := pgx.Connect(ctx, s.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	for i, q := range postgres.KeyLookups {
		exec(fmt.Sprintf("PREPARE lookup%d AS %s", i, q.SQL))
	}
	check := func(state string) {
		for _, mode := range []string{"force_generic_plan", "force_custom_plan"} {
			exec("SET plan_cache_mode = " + mode)
			for i, q := range postgres.KeyLookups {
				params := make([]string, len(q.Args))
				for j := range params {
					params[j] = fmt.Sprintf("$%d", j+1)
				}
				var out string
				if err := conn.QueryRow(ctx, fmt.Sprintf("EXPLAIN (FORMAT JSON) EXECUTE lookup%d(%s)", i, strings.Join(params, ", ")), append([]any{pgx.QueryExecModeSimpleProtocol}, q.Args...)...).Scan(&out); err != nil {
					t.Fatalf("%s: %v", q.Name, err)
				}
				var plans []struct{ Plan planNode }
				if err := json.Unmarshal([]byte(out), &plans); err != nil {
					t.Fatal(err)
				}
				scans := 0
				plans[0].Plan.walk(func(n *planNode) {
					if n.Relation != q.Table || n.Type == "ModifyTable" {
						return
					}
					scans++
					if n.Type == "Tid Scan" {
						return // a row found by its address, which an index probe found
					}
					if n.Type != "Index Scan" && n.Type != "Index Only Scan" {
						t.Errorf("%s, %s, %s: a %s of %s, want an index probe per key", state, mode, q.Name, n.Type, q.Table)
						return
					}
					for _, k := range q.Keys {
						if !strings.Contains(n.IndexCond, k) {
							t.Errorf("%s, %s, %s: the index of %s is probed by %q, not by %s", state, mode, q.Name, q.Table, n.IndexCond, k)
						}
					}
				})
				if scans == 0 {
					t.Errorf("%s, %s, %s: no scan of %s in the plan:\n%s", state, mode, q.Name, q.Table, out)
				}
			}
		}
	}
	check("new board")
	exec(`INSERT INTO laurel_aggs (board, win, span, member, score, at)
		SELECT 'b', w, 0, 'm' || g, g, g FROM generate_series(1, 20000) g, unnest(array['all', 'day']) w`)
	exec(`INSERT INTO laurel_members (board, member, aggs)
		SELECT 'b', 'm' || g, '\x20'::bytea FROM generate_series(1, 20000) g`)
	exec(`INSERT INTO laurel_events (board, seq, member, value, ts, id)
		SELECT 'b', g, 'm' || g, 1, g, 'e' || g FROM generate_series(1, 40000) g`)
	exec(`INSERT INTO laurel_frozen (board, win, span, rank, member, score, at)
		SELECT 'b', 'day', 0, g, 'm' || g, g, g FROM generate_series(1, 20000) g`)
	check("grown board, not analyzed")
	exec("ANALYZE")
	check("grown board, analyzed")
}

// planNode is a node of EXPLAIN's JSON.
type planNode struct {
	Type      string     `json:"Node Type"`
	Relation  string     `json:"Relation Name"`
	IndexCond string     `json:"Index Cond"`
	Plans     []planNode `json:"Plans"`
}

func (n *planNode) walk(fn func(*planNode)) {
	fn(n)
	for i := range n.Plans {
		n.Plans[i].walk(fn)
	}
}
