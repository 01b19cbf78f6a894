package http_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	lhttp "github.com/laurel/laurel/http"
)

// fuzzRoutes are the requests FuzzRequest varies: a method and a path, the query and the
// body coming from the fuzzer.
var fuzzRoutes = []struct{ method, path string }{
	{"GET", "/v1/boards/b/entries"},
	{"GET", "/v1/boards/b/members/alice"},
	{"GET", "/v1/boards/b/members/alice/around"},
	{"GET", "/v1/boards/b/rank"},
	{"GET", "/v1/boards/b/periods"},
	{"GET", "/v1/boards/b/members/alice/history"},
	{"POST", "/v1/boards/b/lookup"},
	{"POST", "/v1/boards/b/events"},
	{"POST", "/v1/events"},
	{"PUT", "/v1/boards/b"},
	{"PUT", "/v1/members/alice"},
	{"DELETE", "/v1/boards/b/events/a1"},
}

// FuzzRequest sends requests whose query and body the fuzzer makes up: the server never
// answers 5xx, an error is the API's JSON error with a known code and the status of that code,
// and a request that fails changes nothing.
func FuzzRequest(f *testing.F) {
	e := start(f, options{})
	e.do("PUT", "/v1/boards/b", `{"windows": ["all", "day", "last7d"]}`).must(f, 201)
	e.do("POST", "/v1/boards/b/events", `{"events": [{"member": "alice", "value": 5, "id": "a1"}, {"member": "bob", "value": 3}]}`).must(f, 200)
	for i, seed := range []struct{ query, body string }{
		{"window=day&limit=10", ""},
		{"limit=%zz", ""},
		{"at=2026-11-22T10:00:00Z&window=all", ""},
		{"score=4", ""},
		{"", `{"members": ["alice", "bob"]}`},
		{"", `{"member": "carol", "value": 7, "id": "c1"}`},
		{"ranks=false", `{"events": [{"board": "b", "member": "dave", "value": 1}]}`},
		{"", `{"name": "Alice", "metadata": {"x": 1}}`},
		{"", `{"windows": ["all", "day", "last7d", "week"]}`},
		{"", "null"},
		{"", "{\"member\": \"u\xff\", \"value\": 1}"},
	} {
		f.Add(uint8(i), seed.query, []byte(seed.body))
	}
	h := e.server.Handler()
	// state is everything a request could change, read through the API.
	state := func() string {
		var b strings.Builder
		for _, p := range []string{"/v1/boards/b", "/v1/boards/b/entries?window=all&limit=1000", "/v1/boards/b/entries?window=day&limit=1000",
			"/v1/boards/b/entries?window=last7d&limit=1000", "/v1/members/alice", "/v1/members/alice/history?window=all"} {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest("GET", p, nil))
			b.WriteString(w.Body.String())
		}
		return b.String()
	}
	f.Fuzz(func(t *testing.T, route uint8, query string, body []byte) {
		r := fuzzRoutes[int(route)%len(fuzzRoutes)]
		target := r.path
		if query != "" {
			target += "?" + query
		}
		req, err := http.NewRequest(r.method, target, bytes.NewReader(body))
		if err != nil {
			return // not a request a client could send
		}
		req.Header.Set("Content-Type", "application/json")
		before := state()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code >= 500 {
			t.Fatalf("%s %s %q: %d %s", r.method, target, body, w.Code, w.Body)
		}
		if w.Code < 400 {
			return
		}
		var out struct {
			Error struct{ Code, Message string }
		}
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || out.Error.Message == "" {
			t.Fatalf("%s %s %q: %d %q is not the API's error", r.method, target, body, w.Code, w.Body)
		}
		if want, ok := lhttp.Statuses[out.Error.Code]; !ok || want != w.Code {
			t.Fatalf("%s %s %q: %d with code %q", r.method, target, body, w.Code, out.Error.Code)
		}
		if after := state(); after != before {
			t.Fatalf("%s %s %q failed (%d %s) but changed the board", r.method, target, body, w.Code, w.Body)
		}
	})
}
