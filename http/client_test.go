package http_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/embedded"
	lhttp "github.com/laurel/laurel/http"
	"github.com/laurel/laurel/laureltest"
)

// The client's end-to-end suite: every scenario runs three times, directly on the embedded
// store, through the Client against a real server on another embedded store, and directly
// on the scale-out store (PostgreSQL and Redis), each with its own fake clock at t0, and
// every step must give identical results and errors on every side: the client speaks for
// the store, and one store for the other.

// side is one way of reaching laurel.
type side struct {
	name  string
	svc   laurel.Service
	clock *laureltest.Clock
}

func newSides(t *testing.T) []side {
	direct := laureltest.NewClock(t0.Format(time.RFC3339))
	store, err := embedded.Open(t.TempDir(), embedded.Options{Now: direct.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := store.Close(); err != nil {
			t.Error(err)
		}
	})
	e := start(t, options{})
	scaled := laureltest.NewClock(t0.Format(time.RFC3339))
	return []side{
		{name: "store", svc: store, clock: direct},
		{name: "client", svc: lhttp.NewClient(e.url), clock: e.clock},
		{name: "scale-out", svc: laureltest.NewScaleOutStore(t).Open(t, scaled.Now), clock: scaled},
	}
}

// step is one call of a scenario, or a move of the clocks.
type step struct {
	name    string
	call    func(ctx context.Context, s laurel.Service) (any, error)
	advance time.Duration
	code    string // the error code wanted; "" for success
	field   string // the error field wanted
	// sameCodeOnly: the server checks this argument itself before the service does, in its
	// own words: only code and field must match.
	sameCodeOnly bool
	check        func(t *testing.T, got any) // more about a success, on the store's answer
}

func advance(d time.Duration) step { return step{name: "advance " + d.String(), advance: d} }

// ok, fails and failsAt make steps.
func ok(name string, call func(context.Context, laurel.Service) (any, error), check ...func(*testing.T, any)) step {
	s := step{name: name, call: call}
	if len(check) > 0 {
		s.check = check[0]
	}
	return s
}

func fails(name, code, field string, call func(context.Context, laurel.Service) (any, error)) step {
	return step{name: name, call: call, code: code, field: field}
}

// serverChecked marks a failing step whose message comes from the server's own check.
func serverChecked(s step) step { s.sameCodeOnly = true; return s }

type scenario struct {
	name  string
	steps []step
}

func runScenario(t *testing.T, sc scenario) {
	sides := newSides(t)
	ctx := context.Background()
	for i, st := range sc.steps {
		if st.advance != 0 {
			for _, sd := range sides {
				sd.clock.Advance(st.advance)
			}
			continue
		}
		results := make([]any, len(sides))
		errs := make([]error, len(sides))
		for j, sd := range sides {
			results[j], errs[j] = st.call(ctx, sd.svc)
		}
		where := fmt.Sprintf("step %d %q", i, st.name)
		for j, err := range errs {
			if got := laurel.ErrorCode(err); got != st.code {
				t.Fatalf("%s on %s: error %v, want code %q", where, sides[j].name, err, st.code)
			}
			if err == nil {
				continue
			}
			var le *laurel.Error
			if !errors.As(err, &le) {
				t.Fatalf("%s on %s: %T is not a *laurel.Error: %v", where, sides[j].name, err, err)
			}
			if le.Field != st.field {
				t.Fatalf("%s on %s: field %q, want %q (%v)", where, sides[j].name, le.Field, st.field, err)
			}
			if le.Message == "" {
				t.Fatalf("%s on %s: no message", where, sides[j].name)
			}
		}
		if st.code != "" {
			for j := 1; j < len(sides); j++ {
				// Only the client's errors can come from the server's own checks.
				if (!st.sameCodeOnly || sides[j].name != "client") && !reflect.DeepEqual(errs[0], errs[j]) {
					t.Fatalf("%s: errors differ\nstore: %#v\n%s: %#v", where, errs[0], sides[j].name, errs[j])
				}
			}
			continue
		}
		for j := 1; j < len(sides); j++ {
			if !same(reflect.ValueOf(results[0]), reflect.ValueOf(results[j])) {
				t.Fatalf("%s: results differ\nstore: %s\n%s: %s", where, show(results[0]), sides[j].name, show(results[j]))
			}
		}
		if st.check != nil {
			t.Run(fmt.Sprintf("%d-%s", i, st.name), func(t *testing.T) { st.check(t, results[0]) })
		}
	}
}

// same is reflect.DeepEqual, except that a nil slice or map equals an empty one (JSON does
// not tell them apart) and unexported fields (caches such as a board's *time.Location) are
// left out.
func same(a, b reflect.Value) bool {
	if !a.IsValid() || !b.IsValid() {
		return a.IsValid() == b.IsValid()
	}
	if a.Type() != b.Type() {
		return false
	}
	switch a.Kind() {
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return same(a.Elem(), b.Elem())
	case reflect.Struct:
		for i := range a.NumField() {
			if a.Type().Field(i).IsExported() && !same(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Slice, reflect.Array:
		if a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !same(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.Len() != b.Len() {
			return false
		}
		for _, k := range a.MapKeys() {
			bv := b.MapIndex(k)
			if !bv.IsValid() || !same(a.MapIndex(k), bv) {
				return false
			}
		}
		return true
	}
	return a.Equal(b)
}

func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%+v", v)
	}
	return string(b)
}

// Shorthands for the calls of the scenarios.

type putResult struct {
	Board   laurel.BoardInfo
	Created bool
}

type rankResult struct{ Rank, Total int }

func putBoard(id string, spec laurel.BoardSpec) func(context.Context, laurel.Service) (any, error) {
	return func(ctx context.Context, s laurel.Service) (any, error) {
		b, created, err := s.PutBoard(ctx, id, spec)
		return putResult{b, created}, err
	}
}

func getBoard(id string) func(context.Context, laurel.Service) (any, error) {
	return func(ctx context.Context, s laurel.Service) (any, error) { return s.Board(ctx, id) }
}

func listBoards() func(context.Context, laurel.Service) (any, error) {
	return func(ctx context.Context, s laurel.Service) (any, error) { return s.Boards(ctx) }
}

func deleteBoard(id string) func(context.Context, laurel.Service) (any, error) {
	return func(ctx context.Context, s laurel.Service) (any, error) { return nil, s.DeleteBoard(ctx, id) }
}

func submit(opts laurel.SubmitOptions, events ...laurel.Event) func(context.Context, laurel.Service) (any, error) {
	return func(ctx context.Context, s laurel.Service) (any, error) {
		return s.Submit(ctx, slices.Clone(events), opts)
	}
}

func retract(board, id string) func(context.Context, laurel.Service) (any, error) {
	return func(ctx context.Context, s laurel.Service) (any, error) { return nil, s.Retract(ctx, board, id) }
}

func page(q laurel.Query, offset, limit int, r laurel.ScoreRange) func(context.Context, laurel.Service) (any, error) {
	return func(ctx context.Context, s laurel.Service) (any, error) { return s.Page(ctx, q, offset, limit, r) }
}

func top(board string) func(context.Context, laurel.Service) (any, error) {
	return page(laurel.Query{Board: board}, 0, 0, laurel.ScoreRange{})
}

func member(q laurel.Query, m string) func(context.Context, laurel.Service) (any, error) {
	return func(ctx context.Context, s laurel.Service) (any, error) { return s.Member(ctx, q, m) }
}

func around(q laurel.Query, m string, radius int) func(context.Context, laurel.Service) (any, error) {
	return func(ctx context.Context, s laurel.Service) (any, error) { return s.Around(ctx, q, m, radius) }
}

func lookup(q laurel.Query, members ...string) func(context.Context, laurel.Service) (any, error) {
	return func(ctx context.Context, s laurel.Service) (any, error) { return s.Lookup(ctx, q, members) }
}

func rankOf(q laurel.Query, score int64) func(context.Context, laurel.Service) (any, error) {
	return func(ctx context.Context, s laurel.Service) (any, error) {
		r, n, err := s.RankOf(ctx, q, score, 0)
		return rankResult{r, n}, err
	}
}

func periods(board, window string) func(context.Context, laurel.Service) (any, error) {
	return func(ctx context.Context, s laurel.Service) (any, error) { return s.Periods(ctx, board, window) }
}

func history(board, window, member string, limit int) func(context.Context, laurel.Service) (any, error) {
	return func(ctx context.Context, s laurel.Service) (any, error) {
		return s.History(ctx, board, window, member, limit)
	}
}

func putProfile(m string, spec laurel.ProfileSpec) func(context.Context, laurel.Service) (any, error) {
	return func(ctx context.Context, s laurel.Service) (any, error) { return s.PutProfile(ctx, m, spec) }
}

func profile(m string) func(context.Context, laurel.Service) (any, error) {
	return func(ctx context.Context, s laurel.Service) (any, error) { return s.Profile(ctx, m) }
}

func deleteMember(m string) func(context.Context, laurel.Service) (any, error) {
	return func(ctx context.Context, s laurel.Service) (any, error) { return nil, s.DeleteMember(ctx, m) }
}

func hide(m string) func(context.Context, laurel.Service) (any, error) {
	return func(ctx context.Context, s laurel.Service) (any, error) { return nil, s.Hide(ctx, m) }
}

func unhide(m string) func(context.Context, laurel.Service) (any, error) {
	return func(ctx context.Context, s laurel.Service) (any, error) { return nil, s.Unhide(ctx, m) }
}

func ev(board, m string, value int64) laurel.Event {
	return laurel.Event{Board: board, Member: m, Value: value}
}

func evAt(board, m string, value int64, at time.Time, id string) laurel.Event {
	return laurel.Event{Board: board, Member: m, Value: value, TS: at.UnixMilli(), HasTS: true, ID: id}
}

func named(e laurel.Event, name string) laurel.Event { e.Name = &name; return e }

func str(s string) *string { return &s }
func i64(n int64) *int64   { return &n }
func intp(n int) *int      { return &n }

var none laurel.SubmitOptions

// Checks on the store's answers, so that the scenarios say what they read.

// ranking checks a page's members, in order, and its total.
func ranking(total int, members ...string) func(*testing.T, any) {
	return func(t *testing.T, got any) {
		p := got.(laurel.Page)
		var ms []string
		for _, e := range p.Entries {
			ms = append(ms, fmt.Sprintf("%s=%d", e.Member, e.Score))
		}
		if !slices.Equal(ms, members) || p.Total != total {
			t.Errorf("page %v of %d, want %v of %d", ms, p.Total, members, total)
		}
	}
}

func statuses(want ...string) func(*testing.T, any) {
	return func(t *testing.T, got any) {
		var st []string
		for _, r := range got.([]laurel.EventResult) {
			st = append(st, r.Status)
		}
		if !slices.Equal(st, want) {
			t.Errorf("statuses %v, want %v", st, want)
		}
	}
}

func created(want bool) func(*testing.T, any) {
	return func(t *testing.T, got any) {
		if c := got.(putResult).Created; c != want {
			t.Errorf("created %v, want %v", c, want)
		}
	}
}

func TestClientScenarios(t *testing.T) {
	const b = "solvers"
	week := []string{"all", "week", "last7d"}
	q := func(window string) laurel.Query { return laurel.Query{Board: b, Window: window} }
	at := func(window string, ts time.Time) laurel.Query {
		return laurel.Query{Board: b, Window: window, At: ts.UnixMilli(), HasAt: true}
	}
	inPeriod := func(window, period string) laurel.Query {
		return laurel.Query{Board: b, Window: window, Period: period}
	}
	// A board and three members: alice 18, bob 14, carol 2.
	seed := []step{
		ok("create", putBoard(b, laurel.BoardSpec{Windows: week, Title: str("Top solvers")}), created(true)),
		ok("seed", submit(none,
			named(evAt(b, "alice", 9, t0.Add(-1*time.Hour), "a1"), "Alice"),
			evAt(b, "bob", 14, t0.Add(-2*time.Hour), "b1"),
			evAt(b, "alice", 9, t0.Add(-30*time.Minute), "a2"),
			ev(b, "carol", 2)), statuses("applied", "applied", "applied", "applied")),
	}
	with := func(steps ...step) []step { return append(slices.Clone(seed), steps...) }

	scenarios := []scenario{
		{"boards", []step{
			ok("list empty", listBoards()),
			ok("create", putBoard(b, laurel.BoardSpec{Order: str("desc"), Mode: str("sum"), Windows: []string{"all", "week", "last7d", "day"},
				Timezone: str("Europe/Berlin"), WeekStart: str("sunday"), LateLimit: str("36h"), Keep: intp(3),
				MinValue: i64(-100), MaxValue: i64(100), Title: str("Top"), Metadata: json.RawMessage(`{"color": "red", "n": [1, 2]}`)}), created(true)),
			ok("create again, same", putBoard(b, laurel.BoardSpec{Order: str("desc")}), created(false)),
			ok("update title and keep", putBoard(b, laurel.BoardSpec{Title: str("Top solvers"), Keep: intp(5)}), created(false)),
			ok("add a window", putBoard(b, laurel.BoardSpec{Windows: []string{"all", "week", "last7d", "day", "month"}}), created(false)),
			fails("change order", laurel.EConflict, "order", putBoard(b, laurel.BoardSpec{Order: str("asc")})),
			fails("change mode", laurel.EConflict, "mode", putBoard(b, laurel.BoardSpec{Mode: str("best")})),
			fails("change timezone", laurel.EConflict, "timezone", putBoard(b, laurel.BoardSpec{Timezone: str("UTC")})),
			fails("remove a window", laurel.EConflict, "windows", putBoard(b, laurel.BoardSpec{Windows: []string{"all"}})),
			fails("bad window", laurel.EInvalid, "windows[1]", putBoard("other", laurel.BoardSpec{Windows: []string{"all", "fortnight"}})),
			fails("no windows", laurel.EInvalid, "windows", putBoard("other", laurel.BoardSpec{Windows: []string{}})),
			fails("bad order", laurel.EInvalid, "order", putBoard("other", laurel.BoardSpec{Order: str("up")})),
			fails("bad timezone", laurel.EInvalid, "timezone", putBoard("other", laurel.BoardSpec{Timezone: str("Mars/Olympus")})),
			fails("bad late_limit", laurel.EInvalid, "late_limit", putBoard("other", laurel.BoardSpec{LateLimit: str("-1h")})),
			fails("bad keep", laurel.EInvalid, "keep", putBoard("other", laurel.BoardSpec{Keep: intp(-1)})),
			fails("bad metadata", laurel.EInvalid, "metadata", putBoard("other", laurel.BoardSpec{Metadata: json.RawMessage(`[1]`)})),
			fails("bad id", laurel.EInvalid, "board", putBoard("Other", laurel.BoardSpec{})),
			fails("empty id", laurel.EInvalid, "board", putBoard("", laurel.BoardSpec{})),
			ok("create with defaults", putBoard("a-board.2", laurel.BoardSpec{}), created(true)),
			ok("asc best", putBoard("race", laurel.BoardSpec{Order: str("asc"), Mode: str("best"), Windows: []string{"day", "last24h", "year"}})),
			ok("get", getBoard(b)),
			ok("list", listBoards(), func(t *testing.T, got any) {
				var ids []string
				for _, bi := range got.([]laurel.BoardInfo) {
					ids = append(ids, bi.ID)
				}
				if want := []string{"a-board.2", "race", b}; !slices.Equal(ids, want) {
					t.Errorf("boards %v, want %v", ids, want)
				}
			}),
			fails("get missing", laurel.ENotFound, "board", getBoard("missing")),
			fails("get bad id", laurel.EInvalid, "board", getBoard("../x")),
			advance(50 * time.Hour),
			ok("get later", getBoard(b)),
			ok("delete", deleteBoard("a-board.2")),
			fails("delete again", laurel.ENotFound, "board", deleteBoard("a-board.2")),
			fails("delete bad id", laurel.EInvalid, "board", deleteBoard("")),
			ok("list after delete", listBoards()),
		}},

		{"submit", with(
			ok("single with everything", submit(none, named(evAt(b, "dave", 5, t0.Add(-time.Minute), "d1"), "Dave"))),
			ok("duplicate", submit(none, evAt(b, "dave", 5, t0.Add(-time.Minute), "d1")), statuses("duplicate")),
			ok("duplicate without ts", submit(none, laurel.Event{Board: b, Member: "dave", Value: 5, ID: "d1"}), statuses("duplicate")),
			fails("id reused", laurel.EConflict, "events[0].id", submit(none, evAt(b, "dave", 6, t0.Add(-time.Minute), "d1"))),
			fails("id reused in a batch", laurel.EConflict, "events[1].id", submit(none, ev(b, "x", 1), evAt(b, "eve", 5, t0, "d1"))),
			ok("batch with a duplicate", submit(none, ev(b, "eve", 3), evAt(b, "dave", 5, t0.Add(-time.Minute), "d1"), ev(b, "bob", -4)),
				statuses("applied", "duplicate", "applied")),
			ok("no ranks", submit(laurel.SubmitOptions{NoRanks: true}, ev(b, "eve", 1))),
			ok("page", top(b), ranking(5, "alice=18", "bob=10", "dave=5", "eve=4", "carol=2")),
			fails("missing board", laurel.ENotFound, "events[0].board", submit(none, ev("missing", "m", 1))),
			fails("missing board, batch", laurel.ENotFound, "events[0].board", submit(none, ev("missing", "m", 1), ev("missing", "n", 1))),
			fails("bad board", laurel.EInvalid, "events[0].board", submit(none, ev("Bad", "m", 1))),
			fails("empty board", laurel.EInvalid, "events[0].board", submit(none, ev("", "m", 1))),
			fails("bad member", laurel.EInvalid, "events[2].member", submit(none, ev(b, "m", 1), ev(b, "n", 1), ev(b, "a/b", 1))),
			fails("empty member", laurel.EInvalid, "events[0].member", submit(none, ev(b, "", 1))),
			fails("control character in name", laurel.EInvalid, "events[0].name", submit(none, named(ev(b, "m", 1), "a\x01"))),
			fails("too late", laurel.ETooLate, "events[0].ts", submit(none, evAt(b, "m", 1, t0.Add(-25*time.Hour), ""))),
			fails("in the future", laurel.EInvalid, "events[1].ts", submit(none, ev(b, "m", 1), evAt(b, "m", 1, t0.Add(time.Hour), ""))),
			fails("no events", laurel.EInvalid, "events", submit(none)),
			fails("too many events", laurel.ETooLarge, "events", submit(none, slices.Repeat([]laurel.Event{ev(b, "m", 1)}, laurel.MaxBatch+1)...)),
			ok("atomic: nothing of the failed batches", top(b), ranking(5, "alice=18", "bob=10", "dave=5", "eve=4", "carol=2")),
			ok("second board", putBoard("teams", laurel.BoardSpec{Windows: []string{"week", "all"}})),
			ok("across boards", submit(none, ev(b, "frank", 7), evAt("teams", "red", 7, t0, "r1"), named(ev("teams", "blue", 3), "Blue"))),
			fails("across boards, one missing", laurel.ENotFound, "events[1].board", submit(none, ev("teams", "red", 1), ev("missing", "m", 1))),
			fails("across boards, one bad", laurel.EInvalid, "events[1].board", submit(none, ev("teams", "red", 1), ev("", "m", 1))),
			ok("bounded board", putBoard("bounded", laurel.BoardSpec{MinValue: i64(0), MaxValue: i64(10)})),
			fails("out of bounds", laurel.EInvalid, "events[1].value", submit(none, ev("bounded", "m", 10), ev("bounded", "m", 11))),
			ok("teams page", top("teams"), ranking(2, "red=7", "blue=3")),
			ok("names from events", profile("blue")),
			ok("too late, imported", submit(laurel.SubmitOptions{Import: true}, evAt(b, "m", 1, t0.Add(-25*time.Hour), "imp-1")), statuses("applied")),
		)},

		{"retract", with(
			ok("retract", retract(b, "a2")),
			ok("page after", top(b), ranking(3, "bob=14", "alice=9", "carol=2")),
			fails("retract again", laurel.ENotFound, "id", retract(b, "a2")),
			fails("retract unknown", laurel.ENotFound, "id", retract(b, "nope")),
			fails("retract on missing board", laurel.ENotFound, "board", retract("missing", "a1")),
			fails("retract empty id", laurel.EInvalid, "id", retract(b, "")),
			fails("retract bad board", laurel.EInvalid, "board", retract("B", "a1")),
			ok("id free again", submit(none, ev(b, "zed", 1), laurel.Event{Board: b, Member: "zed", Value: 4, ID: "a2"}), statuses("applied", "applied")),
			ok("odd ids", submit(none, laurel.Event{Board: b, Member: "m", Value: 1, ID: "x/y"}, laurel.Event{Board: b, Member: "m", Value: 1, ID: ".."},
				laurel.Event{Board: b, Member: "m", Value: 1, ID: "q?a=1&b#c"}, laurel.Event{Board: b, Member: "m", Value: 1, ID: "../../v1/boards"},
				laurel.Event{Board: b, Member: "m", Value: 1, ID: "100% ü"}, laurel.Event{Board: b, Member: "m", Value: 1, ID: "."})),
			ok("retract x/y", retract(b, "x/y")),
			ok("retract ..", retract(b, "..")),
			ok("retract .", retract(b, ".")),
			ok("retract query", retract(b, "q?a=1&b#c")),
			ok("retract path", retract(b, "../../v1/boards")),
			ok("retract percent", retract(b, "100% ü")),
			ok("page at the end", top(b), ranking(4, "bob=14", "alice=9", "zed=5", "carol=2")),
		)},

		{"reads", with(
			ok("page", top(b), ranking(3, "alice=18", "bob=14", "carol=2")),
			ok("offset and limit", page(q("all"), 1, 1, laurel.ScoreRange{}), ranking(3, "bob=14")),
			ok("past the end", page(q("all"), 5, 10, laurel.ScoreRange{}), ranking(3)),
			ok("score range", page(q("all"), 0, 10, laurel.ScoreRange{Min: 2, Max: 14, HasMin: true, HasMax: true}), ranking(3, "bob=14", "carol=2")),
			ok("min score", page(q("all"), 0, 10, laurel.ScoreRange{Min: 10, HasMin: true}), ranking(3, "alice=18", "bob=14")),
			ok("max score with offset", page(q("all"), 1, 10, laurel.ScoreRange{Max: 14, HasMax: true}), ranking(3, "carol=2")),
			ok("week", page(q("week"), 0, 0, laurel.ScoreRange{})),
			ok("rolling", page(q("last7d"), 0, 0, laurel.ScoreRange{})),
			ok("all at an instant: all of it", page(at("all", t0.Add(-45*time.Minute)), 0, 0, laurel.ScoreRange{}), ranking(3, "alice=18", "bob=14", "carol=2")),
			ok("week at an instant: its period", page(at("week", t0.Add(-7*24*time.Hour)), 0, 0, laurel.ScoreRange{}), ranking(0)),
			ok("rolling at an instant: today's bucket", page(at("last7d", t0.Add(-90*time.Minute)), 0, 0, laurel.ScoreRange{}), ranking(3, "alice=18", "bob=14", "carol=2")),
			ok("rolling at an instant: days before", page(at("last7d", t0.Add(-6*24*time.Hour)), 0, 0, laurel.ScoreRange{}), ranking(0)),
			ok("week by id", page(inPeriod("week", "2026-11-16"), 0, 0, laurel.ScoreRange{}), ranking(3, "alice=18", "bob=14", "carol=2")),
			ok("an empty week", page(inPeriod("week", "2026-11-09"), 0, 0, laurel.ScoreRange{}), ranking(0)),
			ok("all by id", page(inPeriod("all", "all"), 0, 0, laurel.ScoreRange{})),
			ok("metadata", page(laurel.Query{Board: b, Metadata: true}, 0, 0, laurel.ScoreRange{})),
			fails("at and period", laurel.EInvalid, "period", page(laurel.Query{Board: b, Window: "week", Period: "2026-11-16", At: t0.UnixMilli(), HasAt: true}, 0, 0, laurel.ScoreRange{})),
			fails("period of a rolling window", laurel.EInvalid, "period", page(inPeriod("last7d", "2026-11-16"), 0, 0, laurel.ScoreRange{})),
			fails("bad period", laurel.EInvalid, "period", page(inPeriod("week", "2026-13-01"), 0, 0, laurel.ScoreRange{})),
			fails("period of all", laurel.EInvalid, "period", page(inPeriod("all", "2026"), 0, 0, laurel.ScoreRange{})),
			fails("unknown window", laurel.EInvalid, "window", page(q("month"), 0, 0, laurel.ScoreRange{})),
			fails("bad window", laurel.EInvalid, "window", page(q("fortnight"), 0, 0, laurel.ScoreRange{})),
			fails("missing board", laurel.ENotFound, "board", top("missing")),
			fails("bad board", laurel.EInvalid, "board", top("")),
			serverChecked(fails("limit too big", laurel.EInvalid, "limit", page(q("all"), 0, laurel.MaxPageLimit+1, laurel.ScoreRange{}))),
			serverChecked(fails("negative offset", laurel.EInvalid, "offset", page(q("all"), -1, 0, laurel.ScoreRange{}))),
			fails("min over max", laurel.EInvalid, "min_score", page(q("all"), 0, 0, laurel.ScoreRange{Min: 5, Max: 4, HasMin: true, HasMax: true})),

			ok("member", member(q(""), "alice")),
			ok("member in week with metadata", member(laurel.Query{Board: b, Window: "week", Metadata: true}, "bob")),
			ok("member at", member(at("all", t0.Add(-45*time.Minute)), "alice")),
			fails("member absent", laurel.ENotFound, "member", member(q(""), "zoe")),
			fails("member absent then", laurel.ENotFound, "member", member(at("week", t0.Add(-7*24*time.Hour)), "bob")),
			fails("member bad", laurel.EInvalid, "member", member(q(""), "")),
			fails("member on missing board", laurel.ENotFound, "board", member(laurel.Query{Board: "missing"}, "alice")),

			ok("around", around(q(""), "bob", 1), ranking(3, "alice=18", "bob=14", "carol=2")),
			ok("around the top, shifted", around(q(""), "alice", 1), ranking(3, "alice=18", "bob=14", "carol=2")),
			ok("around radius 0", around(q(""), "carol", 0), ranking(3, "carol=2")),
			serverChecked(fails("around radius too big", laurel.EInvalid, "radius", around(q(""), "bob", laurel.MaxRadius+1))),
			fails("around absent", laurel.ENotFound, "member", around(q(""), "zoe", 5)),

			ok("lookup", lookup(q(""), "carol", "zoe", "alice", "carol"), ranking(3, "alice=18", "carol=2")),
			ok("lookup nobody", lookup(q("week")), ranking(3)),
			ok("lookup at", lookup(at("week", t0.Add(-7*24*time.Hour)), "alice", "bob", "carol"), ranking(0)),
			ok("lookup in a period with metadata", lookup(laurel.Query{Board: b, Window: "week", Period: "2026-11-16", Metadata: true}, "alice")),
			fails("lookup bad member", laurel.EInvalid, "members[1]", lookup(q(""), "alice", "")),
			fails("lookup at and period", laurel.EInvalid, "period", lookup(laurel.Query{Board: b, Window: "week", Period: "2026-11-16", At: t0.UnixMilli(), HasAt: true}, "alice")),
			fails("lookup too many", laurel.ETooLarge, "members", lookup(q(""), slices.Repeat([]string{"m"}, laurel.MaxLookup+1)...)),

			ok("rank of a score", rankOf(q(""), 14), func(t *testing.T, got any) {
				if r := got.(rankResult); r != (rankResult{3, 3}) {
					t.Errorf("rank %+v, want rank 3 of 3 (after the members with that score)", r)
				}
			}),
			ok("rank of a top score", rankOf(q("week"), 100)),
			ok("rank at", rankOf(at("week", t0.Add(-7*24*time.Hour)), 1)),
			fails("rank in a bad window", laurel.EInvalid, "window", rankOf(q("hour"), 1)),

			ok("periods", periods(b, "week")),
			ok("periods of all", periods(b, "all")),
			ok("periods of the first window", periods(b, "")),
			fails("periods of a rolling window", laurel.EInvalid, "window", periods(b, "last7d")),
			fails("periods of a missing board", laurel.ENotFound, "board", periods("missing", "week")),

			ok("history", history(b, "week", "alice", 10), func(t *testing.T, got any) {
				if pts := got.([]laurel.HistoryPoint); len(pts) != 2 || pts[0].Score != 18 || pts[0].Rank != 1 {
					t.Errorf("history %+v, want alice's two events, 18 and 1st after the second", pts)
				}
			}),
			ok("history of the first window, limited", history(b, "", "bob", 1)),
			ok("history of a member without events", history(b, "all", "zed", 10)),
			fails("history in a bad window", laurel.EInvalid, "window", history(b, "hour", "alice", 10)),
			fails("history over the limit", laurel.EInvalid, "limit", history(b, "all", "alice", 1001)),
			fails("history of a missing board", laurel.ENotFound, "board", history("missing", "all", "alice", 10)),
		)},

		{"periods over time", []step{
			ok("create", putBoard(b, laurel.BoardSpec{Windows: []string{"week", "day", "last2d", "all"}, Keep: intp(1), LateLimit: str("1h")})),
			ok("week 1", submit(none, ev(b, "alice", 5), ev(b, "bob", 3))),
			advance(24 * time.Hour), // Monday: week 2
			ok("week 2", submit(none, ev(b, "bob", 4), ev(b, "carol", 1))),
			ok("this week", top(b), ranking(2, "bob=4", "carol=1")),
			ok("last week, open", page(inPeriod("week", "2026-11-16"), 0, 0, laurel.ScoreRange{}), ranking(2, "alice=5", "bob=3")),
			ok("periods, two", periods(b, "week")),
			advance(2 * time.Hour), // past the late limit: week 1 closes
			ok("last week, closed", page(inPeriod("week", "2026-11-16"), 0, 0, laurel.ScoreRange{}), ranking(2, "alice=5", "bob=3")),
			fails("late for last week", laurel.ETooLate, "events[0].ts", submit(none, evAt(b, "alice", 1, t0.Add(23*time.Hour), ""))),
			ok("rolling two days", page(q("last2d"), 0, 0, laurel.ScoreRange{}), ranking(3, "bob=7", "alice=5", "carol=1")),
			ok("days", periods(b, "day")),
			ok("board", getBoard(b)),
			advance(14 * 24 * time.Hour),
			ok("periods, kept", periods(b, "week")),
			fails("week 1, dropped", laurel.ENotFound, "period", page(inPeriod("week", "2026-11-16"), 0, 0, laurel.ScoreRange{})),
			ok("all", page(q("all"), 0, 0, laurel.ScoreRange{}), ranking(3, "bob=7", "alice=5", "carol=1")),
		}},

		{"modes", []step{
			ok("asc best", putBoard("race", laurel.BoardSpec{Order: str("asc"), Mode: str("best"), Windows: []string{"all", "last24h"}})),
			ok("last", putBoard("level", laurel.BoardSpec{Mode: str("last"), Timezone: str("America/New_York"), Windows: []string{"day", "month", "year"}})),
			ok("times", submit(none, ev("race", "a", 62), ev("race", "b", 58), ev("race", "a", 55), ev("level", "a", 3),
				evAt("level", "a", 9, t0.Add(-time.Hour), ""), ev("level", "b", 4))),
			ok("race", top("race"), ranking(2, "a=55", "b=58")),
			ok("race in range", page(laurel.Query{Board: "race"}, 0, 0, laurel.ScoreRange{Min: 56, HasMin: true}), ranking(2, "b=58")),
			ok("level", top("level"), ranking(2, "b=4", "a=3")),
			ok("race rank", rankOf(laurel.Query{Board: "race"}, 56)),
			ok("level periods", periods("level", "month")),
			ok("level board", getBoard("level")),
		}},

		{"members", with(
			ok("profile from an event", profile("alice")),
			ok("put profile", putProfile("bob", laurel.ProfileSpec{Name: str("Bob"), Metadata: json.RawMessage(` { "country" : "SE" } `)})),
			ok("put name only", putProfile("bob", laurel.ProfileSpec{Name: str("Bobby")}), func(t *testing.T, got any) {
				if p := got.(laurel.Profile); p.Name != "Bobby" || string(p.Metadata) != `{"country":"SE"}` {
					t.Errorf("profile %+v", p)
				}
			}),
			ok("put nothing", putProfile("bob", laurel.ProfileSpec{})),
			ok("profile", profile("bob")),
			ok("empty name", putProfile("carol", laurel.ProfileSpec{Name: str("")})),
			fails("no profile", laurel.ENotFound, "member", profile("zoe")),
			fails("bad member", laurel.EInvalid, "member", profile("")),
			fails("bad metadata", laurel.EInvalid, "metadata", putProfile("bob", laurel.ProfileSpec{Metadata: json.RawMessage(`[1]`)})),
			fails("metadata too big", laurel.EInvalid, "metadata", putProfile("bob", laurel.ProfileSpec{Metadata: json.RawMessage(`{"x": "` + strings.Repeat("x", laurel.MaxMemberMetadata) + `"}`)})),
			fails("name too long", laurel.EInvalid, "name", putProfile("bob", laurel.ProfileSpec{Name: str(strings.Repeat("n", laurel.MaxName+1))})),
			ok("page with names and metadata", page(laurel.Query{Board: b, Metadata: true}, 0, 0, laurel.ScoreRange{})),
			ok("hide", hide("alice")),
			ok("hidden from the page", top(b), ranking(2, "bob=14", "carol=2")),
			ok("hidden profile", profile("alice")),
			fails("hidden member", laurel.ENotFound, "member", member(laurel.Query{Board: b}, "alice")),
			ok("hide one with no profile", hide("nobody")),
			ok("profile of a hidden nobody", profile("nobody")),
			ok("unhide", unhide("alice")),
			ok("back on the page", top(b), ranking(3, "alice=18", "bob=14", "carol=2")),
			fails("hide bad", laurel.EInvalid, "member", hide("a/b")),
			fails("unhide bad", laurel.EInvalid, "member", unhide("")),
			ok("delete member", deleteMember("bob")),
			ok("gone from the page", top(b), ranking(2, "alice=18", "carol=2")),
			fails("gone profile", laurel.ENotFound, "member", profile("bob")),
			ok("delete again", deleteMember("bob")),
			fails("delete bad", laurel.EInvalid, "member", deleteMember("")),
			ok("odd member ids", submit(none, ev(b, ".", 1), ev(b, "..", 2), ev(b, "a b?c#d%20", 3), ev(b, "ü€", 4), ev(b, "@:+&=", 5))),
			ok("odd member", member(laurel.Query{Board: b}, "..")),
			ok("odd member around", around(laurel.Query{Board: b}, ".", 1)),
			ok("odd member profile", putProfile("a b?c#d%20", laurel.ProfileSpec{Name: str("Odd")})),
			ok("odd member profile read", profile("a b?c#d%20")),
			ok("odd member hide", hide("@:+&=")),
			ok("odd member unhide", unhide("@:+&=")),
			ok("odd member delete", deleteMember("ü€")),
			ok("odd member lookup", lookup(laurel.Query{Board: b}, ".", "..", "a b?c#d%20", "ü€"), ranking(6, "a b?c#d%20=3", "..=2", ".=1")),
		)},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) { runScenario(t, sc) })
	}
}

// TestClientKeys checks the errors of keys and scopes through the client.
func TestClientKeys(t *testing.T) {
	e := start(t, options{cfg: lhttp.Config{Keys: lhttp.Keys{Admin: []string{"adm"}, Write: []string{"wri"}, Read: []string{"rea"}}}})
	ctx := context.Background()
	admin, write, read := lhttp.NewClient(e.url, lhttp.WithKey("adm")), lhttp.NewClient(e.url+"/", lhttp.WithKey("wri")),
		&lhttp.Client{URL: e.url, Key: "rea", HTTPClient: &http.Client{Timeout: 10 * time.Second}}
	for _, c := range []struct {
		name string
		err  error
		code string
	}{
		{"no key", func() error { _, err := lhttp.NewClient(e.url).Boards(ctx); return err }(), laurel.EUnauthenticated},
		{"unknown key", func() error { _, err := lhttp.NewClient(e.url, lhttp.WithKey("x")).Boards(ctx); return err }(), laurel.EUnauthenticated},
		{"admin creates", func() error { _, _, err := admin.PutBoard(ctx, "b", laurel.BoardSpec{}); return err }(), ""},
		{"write cannot create", func() error { _, _, err := write.PutBoard(ctx, "b", laurel.BoardSpec{}); return err }(), laurel.EPermissionDenied},
		{"write submits", func() error { _, err := write.Submit(ctx, []laurel.Event{ev("b", "m", 1)}, none); return err }(), ""},
		{"read cannot submit", func() error { _, err := read.Submit(ctx, []laurel.Event{ev("b", "m", 1)}, none); return err }(), laurel.EPermissionDenied},
		{"read reads", func() error {
			_, err := read.Page(ctx, laurel.Query{Board: "b"}, 0, 0, laurel.ScoreRange{})
			return err
		}(), ""},
		{"read cannot hide", read.Hide(ctx, "m"), laurel.EPermissionDenied},
		{"write cannot delete a member", write.DeleteMember(ctx, "m"), laurel.EPermissionDenied},
	} {
		if got := laurel.ErrorCode(c.err); got != c.code {
			t.Errorf("%s: %v, want code %q", c.name, c.err, c.code)
		}
	}
}

// TestClientForeignAnswers checks what the client makes of answers that are not laurel's.
func TestClientForeignAnswers(t *testing.T) {
	status := http.StatusBadGateway
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(status)
		fmt.Fprintln(w, "upstream trouble")
	}))
	defer srv.Close()
	c := lhttp.NewClient(srv.URL)
	ctx := context.Background()
	if _, err := c.Boards(ctx); laurel.ErrorCode(err) != laurel.EInternal {
		t.Errorf("502: %v, want internal", err)
	}
	status = http.StatusServiceUnavailable
	if _, err := c.Boards(ctx); laurel.ErrorCode(err) != laurel.EUnavailable {
		t.Errorf("503: %v, want unavailable", err)
	}
	status = http.StatusOK
	if _, err := c.Boards(ctx); laurel.ErrorCode(err) != laurel.EInternal {
		t.Errorf("200 with text: %v, want internal", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.Boards(cctx); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
	if _, err := lhttp.NewClient("http://127.0.0.1:1").Boards(ctx); laurel.ErrorCode(err) != laurel.EInternal {
		t.Errorf("no server: %v, want internal", err)
	}
}
