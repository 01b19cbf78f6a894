package postgres_test

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/laurel/laurel"
	"github.com/laurel/laurel/laureltest"
	"github.com/laurel/laurel/postgres"
)

// memberRowWindows are the windows of the boards of these tests: all, two calendar windows
// and a rolling one, each element of a member's row but the rolling buckets.
var memberRowWindows = []string{"all", "day", "week", "last7d"}

// readAll reads every window's current page of board, and the periods given, as text to
// compare: members, scores, subscores, ranks and reached_at.
func readAll(t *testing.T, e laurel.Service, board string, periods map[string]string) string {
	t.Helper()
	var out bytes.Buffer
	read := func(q laurel.Query) {
		page, err := e.Page(ctx, q, 0, 1000, laurel.ScoreRange{})
		if err != nil {
			t.Fatalf("%+v: %v", q, err)
		}
		fmt.Fprintf(&out, "%s %s total %d:", q.Window, q.Period, page.Total)
		for _, en := range page.Entries {
			fmt.Fprintf(&out, " %d.%s=%d/%d@%d", en.Rank, en.Member, en.Score, en.Sub, en.ReachedAt)
		}
		out.WriteString("\n")
	}
	for _, w := range memberRowWindows {
		read(laurel.Query{Board: board, Window: w})
	}
	for _, w := range slices.Sorted(maps.Keys(periods)) {
		read(laurel.Query{Board: board, Window: w, Period: periods[w]})
	}
	return out.String()
}

// TestClosedPeriodsLeftInMemberRows: a period's close leaves its aggregates in the rows of
// the members that do not write again (removing them would rewrite every row under the
// board's lock); nothing reads them. Reads of every window, of the closed period, a check of
// the store, a rebuild of the index and a dump imported elsewhere are the embedded store's,
// and a member's next write drops its own.
func TestClosedPeriodsLeftInMemberRows(t *testing.T) {
	clock := laureltest.NewClock("2026-12-07T10:00:00Z")
	target := laureltest.EmbeddedTarget(t)
	emb, err := target.Open(t, clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close(emb)
	store := laureltest.NewScaleOutStore(t)
	so := store.OpenWith(t, postgres.Options{Now: clock.Now, Maintenance: -1, Shards: 2})
	both := func(events ...laurel.Event) {
		t.Helper()
		for _, e := range []laurel.Service{emb, so} {
			submit(t, e, events...)
		}
	}
	for _, e := range []laurel.Service{emb, so} {
		putBoard(t, e, "b", laurel.BoardSpec{Windows: memberRowWindows})
	}
	both(laurel.Event{Board: "b", Member: "m1", Value: 5}, laurel.Event{Board: "b", Member: "m2", Value: 3}, laurel.Event{Board: "b", Member: "m3", Value: 1})
	// Two days on, past its late limit of a day: 2026-12-07 closes at m1's write; m2 and m3
	// keep its aggregates in their rows.
	clock.Set("2026-12-09T10:00:00Z")
	both(laurel.Event{Board: "b", Member: "m1", Value: 1})
	conn, err := pgx.Connect(ctx, store.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	closedDay := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC).UnixMilli()
	left := func() []string {
		t.Helper()
		rows, err := conn.Query(ctx, "SELECT member FROM laurel_member_aggs WHERE board = 'b' AND win = 'day' AND span = $1 ORDER BY member", closedDay)
		if err != nil {
			t.Fatal(err)
		}
		members, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return members
	}
	if got := left(); !slices.Equal(got, []string{"m2", "m3"}) {
		t.Fatalf("the closed day is left in the rows of %v, want m2 and m3's: the test no longer reads rows with closed periods", got)
	}
	periods := map[string]string{"day": "2026-12-07"}
	same := func(what string, e laurel.Service) {
		t.Helper()
		if got, want := readAll(t, e, "b", periods), readAll(t, emb, "b", periods); got != want {
			t.Fatalf("%s:\n%s\nthe embedded store:\n%s", what, got, want)
		}
	}
	same("the closed day left in rows", so)
	check(t, so)
	// The index rebuilt from the rows.
	for _, k := range store.Keys(t) {
		store.Client.Do(ctx, store.Client.B().Del().Key(k).Build())
	}
	same("the index rebuilt", so)
	check(t, so)
	// A dump holds the open periods' aggregates alone: imported, the board reads the same.
	var dump bytes.Buffer
	if err := laureltest.Export(so, &dump); err != nil {
		t.Fatal(err)
	}
	other := laureltest.NewScaleOutStore(t)
	if err := other.Target().Import(t, clock.Now, bytes.NewReader(dump.Bytes())); err != nil {
		t.Fatal(err)
	}
	imported := other.Open(t, clock.Now)
	same("imported", imported)
	check(t, imported)
	// m2's next write drops the closed day from its row.
	both(laurel.Event{Board: "b", Member: "m2", Value: 2})
	if got := left(); !slices.Equal(got, []string{"m3"}) {
		t.Fatalf("after m2's write the closed day is left in the rows of %v, want m3's alone", got)
	}
	same("after m2's write", so)
	check(t, so)
}

// TestMemberRowsMigration: a store written as before member rows (every aggregate a row of
// laurel_aggs) reads the same once a node migrates it: pages of every window and of closed
// periods, a check, a rebuilt index and the dump. The store is written by this version and
// its rows put back as the schema before had them, for random events of a few weeks on a
// board without a subscore and one with. Run with -seed to repeat a run.
func TestMemberRowsMigration(t *testing.T) {
	seed := laureltest.Seed(t)
	rng := rand.New(rand.NewPCG(seed, seed))
	clock := laureltest.NewClock("2026-11-20T10:00:00Z")
	store := laureltest.NewScaleOutStore(t)
	e := store.OpenWith(t, postgres.Options{Now: clock.Now, Maintenance: -1, Shards: 2})
	putBoard(t, e, "plain", laurel.BoardSpec{Windows: memberRowWindows})
	putBoard(t, e, "subs", laurel.BoardSpec{Windows: memberRowWindows, Subscore: ptr("desc")})
	for range 60 {
		var events []laurel.Event
		for range 1 + rng.IntN(8) {
			board := "plain"
			ev := laurel.Event{Member: fmt.Sprintf("m%d", rng.IntN(12)), Value: int64(1 + rng.IntN(9))}
			if rng.IntN(2) == 0 {
				board, ev.Sub = "subs", int64(rng.IntN(5))
			}
			ev.Board = board
			events = append(events, ev)
		}
		clock.Advance(time.Duration(rng.IntN(6)) * time.Hour)
		submit(t, e, events...)
	}
	periods := map[string]string{"day": "2026-11-20", "week": "2026-11-16"}
	before := map[string]string{}
	for _, b := range []string{"plain", "subs"} {
		before[b] = readAll(t, e, b, periods)
	}
	check(t, e)
	var dump bytes.Buffer
	if err := laureltest.Export(e, &dump); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	// The schema before: every aggregate of an open span a row, none of a closed one, no
	// member rows, migration 007 not applied; and no index.
	conn, err := pgx.Connect(ctx, store.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, sql := range []string{
		`INSERT INTO laurel_aggs (board, win, span, member, score, at, sub)
			SELECT a.board, a.win, a.span, a.member, a.score, a.at, a.sub FROM laurel_member_aggs a
			WHERE NOT EXISTS (SELECT 1 FROM laurel_closed c WHERE c.board = a.board AND c.win = a.win AND c.span = a.span)`,
		"DROP VIEW laurel_member_aggs",
		"DROP FUNCTION laurel_member_elems",
		"DROP TABLE laurel_members",
		"DELETE FROM laurel_migrations WHERE name = '007_member_rows.sql'",
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	var rows, subs int
	if err := conn.QueryRow(ctx, "SELECT count(*), count(sub) FROM laurel_aggs WHERE win NOT LIKE 'last%'").Scan(&rows, &subs); err != nil || rows == 0 || subs == 0 {
		t.Fatalf("the schema before holds %d aggregates of all and calendar periods, %d with a subscore (%v): the test writes too little", rows, subs, err)
	}
	for _, k := range store.Keys(t) {
		store.Client.Do(ctx, store.Client.B().Del().Key(k).Build())
	}
	migrated := store.Open(t, clock.Now)
	for _, b := range []string{"plain", "subs"} {
		if got := readAll(t, migrated, b, periods); got != before[b] {
			t.Fatalf("board %s, migrated:\n%s\nbefore:\n%s", b, got, before[b])
		}
	}
	check(t, migrated)
	var again bytes.Buffer
	if err := laureltest.Export(migrated, &again); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(dump.Bytes(), again.Bytes()) {
		t.Fatalf("the migrated store's dump differs: %s", firstDiff(dump.Bytes(), again.Bytes()))
	}
	// And it takes writes: a member's row, and its buckets, as the migration left them.
	for _, b := range []string{"plain", "subs"} {
		submit(t, migrated, laurel.Event{Board: b, Member: "m1", Value: 1})
	}
	check(t, migrated)
}
