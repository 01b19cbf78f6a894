package http_test

import (
	"strings"
	"testing"
)

// TestTags: an event's tag comes back, compacted, on the entry its event made the score of, in
// every read of entries and on its history point; a retracted best falls back to the next
// best with that one's tag; a tag over 256 bytes is 400 invalid_argument naming it, and stores
// nothing of its batch.
func TestTags(t *testing.T) {
	e := start(t, options{})
	e.do("PUT", "/v1/boards/laps", map[string]any{"order": "asc", "mode": "best", "windows": []string{"all", "day"}}).must(t, 201)
	e.do("POST", "/v1/boards/laps/events", `{"member": "ada", "value": 61250, "tag": {"car": "kart-3", "laps": [1, 2]}}`).must(t, 200)
	e.do("POST", "/v1/boards/laps/events", `{"member": "ada", "value": 59000, "id": "r2", "tag": "kart-5"}`).must(t, 200)
	e.do("POST", "/v1/boards/laps/events", `{"member": "ada", "value": 63000, "tag": "kart-9"}`).must(t, 200)
	e.do("POST", "/v1/boards/laps/events", `{"member": "bob", "value": 60000}`).must(t, 200)

	page := e.do("GET", "/v1/boards/laps/entries", nil).must(t, 200)
	if got := page.get("entries", 0, "tag"); got != "kart-5" {
		t.Errorf("ada's best (59000) shows tag %v, want kart-5: %s", got, page.raw)
	}
	if !strings.Contains(string(page.raw), `"tag":"kart-5"`) || strings.Count(string(page.raw), `"tag"`) != 1 {
		t.Errorf("the page shows a tag on an untagged entry, or not ada's: %s", page.raw)
	}
	for _, path := range []string{"/v1/boards/laps/members/ada?window=day", "/v1/boards/laps/members/ada/around"} {
		if r := e.do("GET", path, nil).must(t, 200); !strings.Contains(string(r.raw), `"tag":"kart-5"`) {
			t.Errorf("%s lacks ada's tag: %s", path, r.raw)
		}
	}
	if r := e.do("POST", "/v1/boards/laps/lookup", map[string]any{"members": []string{"bob", "ada"}}).must(t, 200); !strings.Contains(string(r.raw), `"tag":"kart-5"`) {
		t.Errorf("the lookup lacks ada's tag: %s", r.raw)
	}

	e.do("DELETE", "/v1/boards/laps/events/r2", nil).must(t, 200)
	r := e.do("GET", "/v1/boards/laps/members/ada", nil).must(t, 200)
	if got := string(r.raw); !strings.Contains(got, `"score":61250`) || !strings.Contains(got, `"tag":{"car":"kart-3","laps":[1,2]}`) {
		t.Errorf("after the best's retraction, ada's entry is not the next best with its tag, compacted: %s", got)
	}

	h := e.do("GET", "/v1/boards/laps/members/ada/history?window=all", nil).must(t, 200)
	// The newest point is the 63000 lap's, which left ada's best at 59000: its own tag, not
	// the best's.
	if h.get("points", 0, "tag") != "kart-9" || h.get("points", 0, "score") != 59000.0 {
		t.Errorf("the newest point does not carry its own event's tag: %s", h.raw)
	}

	big := `"` + strings.Repeat("t", 255) + `"` // 257 bytes
	e.do("POST", "/v1/boards/laps/events", `{"member": "cy", "value": 1, "tag": `+big+`}`).isError(t, 400, "invalid_argument", "tag")
	e.do("POST", "/v1/boards/laps/events", `{"events": [{"member": "cy", "value": 1, "tag": "ok"}, {"member": "dee", "value": 2, "tag": `+big+`}]}`).
		isError(t, 400, "invalid_argument", "events[1].tag")
	if total := e.do("GET", "/v1/boards/laps/entries", nil).must(t, 200).get("total"); total != 2.0 {
		t.Errorf("a refused batch stored something: total %v", total)
	}
	e.do("POST", "/v1/boards/laps/events", `{"member": "cy", "value": 1, "tag": "`+strings.Repeat("t", 254)+`"}`).must(t, 200) // 256 bytes
}
