package postgres_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/embedded"
	"github.com/laurel/laurel/laureltest"
	"github.com/laurel/laurel/postgres"
)

func TestRecords(t *testing.T) {
	s := laureltest.NewScaleOutStore(t)
	laureltest.Records(t, s.Open(t, nil))
}

func TestHookRules(t *testing.T) {
	clock := laureltest.NewClock("2026-11-02T10:00:00Z")
	laureltest.HookRules(t, laureltest.NewScaleOutStore(t).Open(t, clock.Now), clock)
}

func TestTournamentRules(t *testing.T) {
	clock := laureltest.NewClock("2026-10-31T12:00:00Z")
	laureltest.TournamentRules(t, laureltest.NewScaleOutStore(t).Open(t, clock.Now), clock, laureltest.Seed(t), 200)
}

// TestRecordsInDumps: the records (webhooks, deliveries, entries) go through a dump from the
// embedded store to this one and back, byte for byte.
func TestRecordsInDumps(t *testing.T) {
	ctx := context.Background()
	emb, err := embedded.Open(t.TempDir(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Close()
	want := map[string]string{}
	for i := range 50 {
		kind, key, value := fmt.Sprintf("kind%d", i%3), fmt.Sprintf("k:%03d", i), fmt.Sprintf("\x00value %d\xff", i)
		if ok, err := emb.SwapRecord(ctx, kind, key, nil, []byte(value)); !ok || err != nil {
			t.Fatal(ok, err)
		}
		want[kind+"/"+key] = value
	}
	if _, _, err := emb.PutBoard(ctx, "b", laurel.BoardSpec{}); err != nil {
		t.Fatal(err)
	}
	records := func(r laurel.Records) map[string]string {
		got := map[string]string{}
		for _, kind := range []string{"kind0", "kind1", "kind2"} {
			recs, err := r.Records(ctx, kind, "", "", 100)
			if err != nil {
				t.Fatal(err)
			}
			for _, rec := range recs {
				got[kind+"/"+rec.Key] = string(rec.Value)
			}
		}
		return got
	}
	var dump bytes.Buffer
	if err := laureltest.Export(emb, &dump); err != nil {
		t.Fatal(err)
	}
	so := laureltest.NewScaleOutStore(t).Open(t, nil)
	boards, err := laurel.VerifyDump(bytes.NewReader(dump.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	rd, err := laurel.NewDumpReader(bytes.NewReader(dump.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if err := so.Import(ctx, rd, boards); err != nil {
		t.Fatal(err)
	}
	if got := records(so); !maps.Equal(got, want) {
		t.Fatalf("after the import into PostgreSQL: %d records, want %d: %v", len(got), len(want), got)
	}
	dump.Reset()
	if err := laureltest.Export(so, &dump); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rd, err = laurel.NewDumpReader(bytes.NewReader(dump.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if err := embedded.Import(dir, rd, embedded.Options{}); err != nil {
		t.Fatal(err)
	}
	back, err := embedded.Open(dir, embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	if got := records(back); !maps.Equal(got, want) {
		t.Fatalf("back in the embedded store: %d records, want %d", len(got), len(want))
	}
}

func TestCohortRules(t *testing.T) {
	clock := laureltest.NewClock("2026-10-24T12:00:00Z")
	// Then with the index lost and rebuilt, then through a dump into the embedded store.
	so := laureltest.NewScaleOutStore(t)
	rebuilt := func(from laureltest.HookStore) laureltest.HookStore {
		ctx := context.Background()
		for _, k := range so.Keys(t) {
			so.Client.Do(ctx, so.Client.B().Del().Key(k).Build())
		}
		for _, b := range []string{"league", "skill"} {
			if err := from.(*postgres.Store).Rebuild(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
		return from
	}
	laureltest.CohortRules(t, so.Open(t, clock.Now), clock, laureltest.Seed(t), 80, rebuilt, func(from laureltest.HookStore) laureltest.HookStore {
		return laureltest.IntoEmbedded(t, from.(*postgres.Store), clock.Now)
	})
}

func TestLeagueRules(t *testing.T) {
	clock := laureltest.NewClock("2026-10-30T12:00:00Z")
	laureltest.LeagueRules(t, laureltest.NewScaleOutStore(t).Open(t, clock.Now), clock, laureltest.Seed(t), 60, func(from laureltest.HookStore) laureltest.HookStore {
		return laureltest.IntoEmbedded(t, from.(*postgres.Store), clock.Now)
	})
}

// TestImportRefusesInvalidDumps: laureltest.ImportRefuses, on the scale-out store, where the
// import of a dump is one transaction.
func TestImportRefusesInvalidDumps(t *testing.T) {
	laureltest.ImportRefuses(t, func(t *testing.T) laureltest.Target { return laureltest.NewScaleOutStore(t).Target() })
}

// TestImportKeepsTheStoresRecords: a dump imported into a store in use may not replace a
// record the store holds (its webhook, say: a live hook was replaced by the dump's copy,
// receiver and secret); one it holds the same is imported.
func TestImportKeepsTheStoresRecords(t *testing.T) {
	s := laureltest.NewScaleOutStore(t)
	e := s.Open(t, nil)
	if ok, err := e.SwapRecord(ctx, "hook", "hk1", nil, []byte(`{"url":"http://live.example/"}`)); err != nil || !ok {
		t.Fatalf("the store's hook: %v, %v", ok, err)
	}
	tg := s.Target()
	dump := func(value string) []byte {
		return laureltest.SealDump(laureltest.DumpHeader, fmt.Sprintf(`{"record":{"kind":"hook","key":"hk1","value":%q}}`, base64.StdEncoding.EncodeToString([]byte(value))),
			`{"board":{"id":"b","config":{"windows":["all"]},"created_at":0}}`)
	}
	err := tg.Import(t, nil, bytes.NewReader(dump(`{"url":"http://other.example/"}`)))
	if laurel.ErrorCode(err) != laurel.EConflict || !strings.Contains(err.Error(), `hook record "hk1"`) {
		t.Fatalf("a dump with another hk1: %v; want a conflict naming it", err)
	}
	if v, err := e.Record(ctx, "hook", "hk1"); err != nil || string(v) != `{"url":"http://live.example/"}` {
		t.Fatalf("the store's hook after the refused import: %s, %v", v, err)
	}
	if _, err := e.Board(ctx, "b"); laurel.ErrorCode(err) != laurel.ENotFound {
		t.Fatalf("the refused dump's board: %v; want not found", err)
	}
	if err := tg.Import(t, nil, bytes.NewReader(dump(`{"url":"http://live.example/"}`))); err != nil {
		t.Fatalf("a dump with the same hk1: %v", err)
	}
	if _, err := e.Board(ctx, "b"); err != nil {
		t.Fatalf("the dump's board: %v", err)
	}
}

func TestPreviousRules(t *testing.T) {
	clock := laureltest.NewClock("2026-12-07T10:00:00Z")
	laureltest.PreviousRules(t, laureltest.NewScaleOutStore(t).Open(t, clock.Now), clock)
}
