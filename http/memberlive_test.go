package http_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/laurel/laurel/competition"
	lhttp "github.com/laurel/laurel/http"
	"github.com/laurel/laurel/laureltest"
)

// standingEvent is an event of a member's stream, decoded.
type standingEvent struct {
	Window string `json:"window"`
	Period struct {
		ID string `json:"id"`
	} `json:"period"`
	Total    int                  `json:"total"`
	Rank     *int                 `json:"rank"`
	Score    *int64               `json:"score"`
	Previous *struct{ Rank *int } `json:"previous"`
	PassedBy *struct {
		Member string `json:"member"`
		Name   string `json:"name"`
		Rank   int    `json:"rank"`
	} `json:"passed_by"`
	Passed *struct {
		Member string `json:"member"`
		Rank   int    `json:"rank"`
	} `json:"passed"`
}

// says renders an event as the page's member panel would: rank, previous rank, who crossed.
func (s standingEvent) says() string {
	out := s.Window + " "
	if s.Previous != nil {
		if s.Previous.Rank != nil {
			out += "#" + strconv.Itoa(*s.Previous.Rank) + " → "
		} else {
			out += "unranked → "
		}
	}
	if s.Rank == nil {
		out += "unranked"
	} else {
		out += "#" + strconv.Itoa(*s.Rank)
	}
	if s.PassedBy != nil {
		out += " passed by " + s.PassedBy.Member
	}
	if s.Passed != nil {
		out += " passed " + s.Passed.Member
	}
	return out
}

// nextStanding returns the next event of a member's stream, decoded.
func nextStanding(t *testing.T, ch <-chan sseEvent) standingEvent {
	t.Helper()
	ev := next(t, ch, 5*time.Second)
	if ev.event != "standing" {
		t.Fatalf("event %s %s, want standing", ev.event, ev.data)
	}
	var s standingEvent
	if err := json.Unmarshal([]byte(ev.data), &s); err != nil {
		t.Fatalf("%s: %v", ev.data, err)
	}
	return s
}

// expectSays reads the next events of a stream, one per window, and compares what they say.
func expectSays(t *testing.T, ch <-chan sseEvent, want ...string) {
	t.Helper()
	for _, w := range want {
		if got := nextStanding(t, ch).says(); got != w {
			t.Fatalf("stream says %q, want %q", got, w)
		}
	}
}

// expectSaysAnyOrder reads as many standings as want holds and checks they say want, in any
// order: the windows' changes of one write come in no set order (across nodes, each window's
// notice travels on its own), only the opening ones do.
func expectSaysAnyOrder(t *testing.T, ch <-chan sseEvent, want ...string) {
	t.Helper()
	says := make([]string, len(want))
	for i := range want {
		says[i] = nextStanding(t, ch).says()
	}
	if !slices.Equal(slices.Sorted(slices.Values(says)), slices.Sorted(slices.Values(want))) {
		t.Fatalf("stream says %q, want %q in any order", says, want)
	}
}

// memberStreamStory is what both stores must tell a member's stream: writer submits, admin
// hides and erases, the stream was opened on reader.
func memberStreamStory(t *testing.T, writer, reader *env) {
	writer.do("PUT", "/v1/boards/g", map[string]any{"windows": []string{"all", "day"}, "mode": "best"}).must(t, 201)
	writer.do("POST", "/v1/boards/g/events", `{"events": [{"member": "ann", "value": 9, "name": "Ann"}, {"member": "me", "value": 5}, {"member": "bob", "value": 3}]}`).must(t, 200)

	ch, _ := reader.openStream("/v1/boards/g/members/me/stream")
	expectSays(t, ch, "all #2", "day #2")
	// The first batch's notice (three members moved) may reach the reader's node after the
	// stream opened, and in one burst with the next write's it would leave that naming no one.
	// A change of the member's own score, said, is heard after it: notices come in order.
	writer.do("POST", "/v1/boards/g/events", `{"member": "me", "value": 6}`).must(t, 200)
	expectSaysAnyOrder(t, ch, "all #2 → #2", "day #2 → #2")

	// One member passes: named, in every window.
	writer.do("POST", "/v1/boards/g/events", `{"member": "bob", "value": 7, "name": "Bob"}`).must(t, 200)
	expectSaysAnyOrder(t, ch, "all #2 → #3 passed by bob", "day #2 → #3 passed by bob")

	// The member passes one back itself: the one now beside it is named.
	writer.do("POST", "/v1/boards/g/events", `{"member": "me", "value": 8}`).must(t, 200)
	expectSaysAnyOrder(t, ch, "all #3 → #2 passed bob", "day #3 → #2 passed bob")

	// A change above it that does not move it says nothing; the next that does, does (the two
	// may come in one burst, which names no one: two members moved).
	writer.do("POST", "/v1/boards/g/events", `{"member": "ann", "value": 10}`).must(t, 200)
	writer.do("POST", "/v1/boards/g/events", `{"member": "me", "value": 20}`).must(t, 200)
	for _, s := range []standingEvent{nextStanding(t, ch), nextStanding(t, ch)} {
		if !strings.HasPrefix(s.says(), "all #2 → #1") && !strings.HasPrefix(s.says(), "day #2 → #1") || *s.Score != 20 {
			t.Fatalf("after me's 20: %s, score %v", s.says(), *s.Score)
		}
	}

	// Hidden, the member is unranked; unhidden, ranked again.
	writer.do("POST", "/v1/members/me/hide", nil).must(t, 200)
	expectSaysAnyOrder(t, ch, "all #1 → unranked", "day #1 → unranked")
	writer.do("POST", "/v1/members/me/unhide", nil).must(t, 200)
	expectSaysAnyOrder(t, ch, "all unranked → #1", "day unranked → #1")

	// Another member erased above nobody, below it: nothing said. Erased itself: unranked.
	writer.do("DELETE", "/v1/members/bob", nil).must(t, 204)
	writer.do("DELETE", "/v1/members/me", nil).must(t, 204)
	expectSaysAnyOrder(t, ch, "all #1 → unranked", "day #1 → unranked")

	// One window only.
	one, _ := reader.openStream("/v1/boards/g/members/ann/stream?window=day")
	expectSays(t, one, "day #1")
	// One member passes it: named — unless a notice that may have moved anyone (the erasures',
	// each reaching the stream's node when it does, across nodes) comes in one burst with the
	// pass, which then names no one. Each pass moves it down one rank; one of a few, once the
	// late notices are sent, is named.
	named := false
	for i, m := range []string{"cy", "dee", "eve", "fay", "gus"} {
		writer.do("POST", "/v1/boards/g/events", fmt.Sprintf(`{"member": %q, "value": %d}`, m, 50-i)).must(t, 200)
		got, moved := nextStanding(t, one).says(), fmt.Sprintf("day #%d → #%d", i+1, i+2)
		if got != moved && got != moved+" passed by "+m {
			t.Fatalf("stream says %q, want %q", got, moved+" passed by "+m)
		}
		if named = got != moved; named {
			break
		}
	}
	if !named {
		t.Fatal("five passes, each alone after the one before was said, and none named")
	}

	// The board deleted ends the streams with an error.
	writer.do("DELETE", "/v1/boards/g", nil).must(t, 204)
	for _, c := range []<-chan sseEvent{ch, one} {
		if ev := next(t, c, 5*time.Second); ev.event != "error" || !strings.Contains(ev.data, `"not_found"`) {
			t.Fatalf("after the board's deletion: %s %s", ev.event, ev.data)
		}
	}
}

func TestMemberStream(t *testing.T) {
	e := start(t, options{})
	memberStreamStory(t, e, e)
}

// TestMemberStreamAcrossNodes: on the scale-out store, a member streaming from one node hears
// what another node's writes did to it, who passed it included.
func TestMemberStreamAcrossNodes(t *testing.T) {
	so := laureltest.NewScaleOutStore(t)
	clock := laureltest.NewClock(t0.Format(time.RFC3339))
	node := func() *env {
		store := so.Open(t, clock.Now)
		contests := competition.New(store, store, clock.Now)
		return start(t, options{clock: clock, service: contests,
			cfg: lhttp.Config{Contests: contests, Watcher: store, MemberWatcher: store}})
	}
	memberStreamStory(t, node(), node())
}

func TestMemberStreamErrors(t *testing.T) {
	e := start(t, options{})
	e.do("PUT", "/v1/boards/g", map[string]any{"windows": []string{"all"}}).must(t, 201)
	e.do("GET", "/v1/boards/nope/members/me/stream", nil).isError(t, 404, "not_found", "board")
	e.do("GET", "/v1/boards/g/members/me/stream?window=week", nil).isError(t, 400, "invalid_argument", "window")
	e.do("GET", "/v1/boards/g/members/me/stream?period=all", nil).isError(t, 400, "invalid_argument", "period")

	// A member not ranked yet gets its standing without a rank, then its first rank.
	ch, _ := e.openStream("/v1/boards/g/members/me/stream")
	expectSays(t, ch, "all unranked")
	e.do("POST", "/v1/boards/g/events", `{"member": "me", "value": 5}`).must(t, 200)
	expectSays(t, ch, "all unranked → #1")
}

// TestHiddenMemberHistory: a hidden member's rank history is not_found until it is unhidden,
// on both stores, and reads as before once it is (api.md, "Live and history").
func TestHiddenMemberHistory(t *testing.T) {
	for name, e := range map[string]*env{"embedded": start(t, options{}), "scale-out": func() *env {
		so := laureltest.NewScaleOutStore(t)
		clock := laureltest.NewClock(t0.Format(time.RFC3339))
		store := so.Open(t, clock.Now)
		return start(t, options{clock: clock, service: store})
	}()} {
		t.Run(name, func(t *testing.T) {
			e.do("PUT", "/v1/boards/h", map[string]any{"windows": []string{"all"}}).must(t, 201)
			e.do("POST", "/v1/boards/h/events", `{"events": [{"member": "ann", "value": 9}, {"member": "me", "value": 5}]}`).must(t, 200)
			e.do("POST", "/v1/members/me/hide", nil).must(t, 200)
			e.do("GET", "/v1/boards/h/members/me/history", nil).isError(t, 404, "not_found", "member")
			e.do("POST", "/v1/members/me/unhide", nil).must(t, 200)
			if h := e.do("GET", "/v1/boards/h/members/me/history", nil).must(t, 200); len(h.get("points").([]any)) != 1 {
				t.Fatalf("unhidden, its history: %v", h)
			}
		})
	}
}
