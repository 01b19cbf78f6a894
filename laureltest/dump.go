package laureltest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/laurel/laurel"
)

// DumpHeader is the first line of a dump of this build.
const DumpHeader = `{"laurel_dump":5}`

// SealDump makes a dump of lines written by hand (the header first): it joins them and adds
// the trailer that laurel.DumpReader checks, as laurel.DumpWriter.Close does.
func SealDump(lines ...string) []byte {
	body := strings.Join(lines, "\n") + "\n"
	sum := sha256.Sum256([]byte(body))
	return []byte(body + fmt.Sprintf(`{"end":{"records":%d,"sha256":%q}}`+"\n", len(lines)-1, hex.EncodeToString(sum[:])))
}

// ImportRefuses imports into a new store of each target (newTarget) dumps that are not
// valid, each for another reason: each must be refused as invalid_argument saying why, and
// leave nothing behind, so that a valid dump imports next. Every bad dump begins with a
// profile, which must not stay either.
func ImportRefuses(t *testing.T, newTarget func(t *testing.T) Target) {
	day := time.Date(2026, 11, 16, 0, 0, 0, 0, time.UTC).UnixMilli()
	const head = DumpHeader
	profile := `{"profile":{"member":"p","name":"P"}}`
	board := `{"board":{"id":"b","config":{"windows":["day","all"]},"created_at":0}}`
	closed := func(total int, removed string) string {
		return fmt.Sprintf(`{"closed":{"board":"b","window":"day","id":"2026-11-16","start":%d,"end":%d,"total":%d%s}}`, day, day+24*3600_000, total, removed)
	}
	frozen := func(rank int, member string) string {
		return fmt.Sprintf(`{"frozen":{"board":"b","window":"day","start":%d,"rank":%d,"member":%q,"score":1,"at":1}}`, day, rank, member)
	}
	event := func(seq int, member, more string) string {
		return fmt.Sprintf(`{"event":{"board":"b","seq":%d,"member":%q,"value":1,"ts":1%s}}`, seq, member, more)
	}
	history := func(seq int, member string) string {
		return fmt.Sprintf(`{"history":{"board":"b","member":%q,"seq":%d,"ts":1,"points":{"all":[1,1]}}}`, member, seq)
	}
	agg := fmt.Sprintf(`{"agg":{"board":"b","window":"day","start":%d,"member":"m","score":1,"at":1}}`, day)
	for _, tc := range []struct {
		name  string
		lines []string
		want  string
	}{
		{"two kinds", []string{head, profile, `{"hidden":"a","profile":{"member":"a","name":"A"}}`}, "dump record 3: want exactly one"},
		{"another board's record", []string{head, profile, board, `{"event":{"board":"c","seq":1,"member":"m","value":1,"ts":1}}`}, `dump record 4: a record of board "c"`},
		{"events out of order", []string{head, profile, board, event(2, "m", ""), event(2, "n", "")}, "dump record 5: event seq 2 after 2"},
		{"an id twice", []string{head, profile, board, event(1, "m", `,"id":"x"`), event(2, "m", `,"id":"x","retracted":true`), event(3, "n", `,"id":"x"`)},
			`is the id of an earlier event`},
		{"a closed period short of entries", []string{head, profile, board, closed(3, `,"removed":[2]`), frozen(1, "m"), agg},
			`dump record 4: closed period "2026-11-16" of window day has 1 entries and 1 removed ranks, but a total of 3`},
		{"a member twice in a closed period", []string{head, profile, board, closed(2, ""), frozen(1, "m"), frozen(2, "m")}, `dump record 6: member "m" comes twice`},
		{"a period open and closed", []string{head, profile, board, agg, closed(0, "")}, "dump record 5: window day: the period starting at"},
		{"a period closed twice", []string{head, profile, board, closed(0, ""), closed(0, "")}, "dump record 5: window day: the period starting at"},
		{"a history rank of 0", []string{head, profile, board, `{"history":{"board":"b","member":"m","seq":1,"ts":1,"points":{"all":[1,0]}}}`}, "dump record 4: history of member"},
		{"history without its event", []string{head, profile, board, event(1, "m", ""), history(2, "m")}, `history of member "m": no event 2 of board "b"`},
		{"history of another member's event", []string{head, profile, board, event(1, "m", ""), history(1, "n")}, `history of member "n": no event 1 of board "b"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := newTarget(t)
			now := func() int64 { return day + 3600_000 }
			err := tg.Import(t, now, bytes.NewReader(SealDump(tc.lines...)))
			if err == nil || laurel.ErrorCode(err) != laurel.EInvalid || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want invalid_argument with %q", err, tc.want)
			}
			// Nothing of it stays: the same store takes a valid dump of the same board next.
			if err := tg.Import(t, now, bytes.NewReader(SealDump(head, board, event(1, "m", `,"id":"x"`), `{"agg":{"board":"b","window":"all","start":0,"member":"m","score":1,"at":1}}`))); err != nil {
				t.Fatalf("a valid dump after the refused one: %v", err)
			}
			svc, err := tg.open(t, now)
			if err != nil {
				t.Fatal(err)
			}
			defer tg.close(svc)
			if p, err := svc.Profile(context.Background(), "p"); laurel.ErrorCode(err) != laurel.ENotFound {
				t.Errorf("the refused dump's profile stayed: %+v, %v", p, err)
			}
			page, err := svc.Page(context.Background(), laurel.Query{Board: "b", Window: "all"}, 0, 10, laurel.ScoreRange{})
			if err != nil || page.Total != 1 || page.Entries[0].Member != "m" || page.Entries[0].Score != 1 {
				t.Errorf("the board imported after the refused dump: %+v, %v; want m alone, with 1", page, err)
			}
		})
	}
}
