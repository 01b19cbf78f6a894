package http_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/laurel/laurel"
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
	state := stateOf(h, "/v1/boards/b", "/v1/boards/b/entries?window=all&limit=1000", "/v1/boards/b/entries?window=day&limit=1000",
		"/v1/boards/b/entries?window=last7d&limit=1000", "/v1/members/alice", "/v1/members/alice/history?window=all")
	f.Fuzz(func(t *testing.T, route uint8, query string, body []byte) {
		r := fuzzRoutes[int(route)%len(fuzzRoutes)]
		req := fuzzedRequest(r.method, r.path, query, body)
		if req == nil {
			return // not a request a client could send
		}
		serveChecked(t, h, req, body, state)
	})
}

// fuzzedRequest is a request of JSON body to path with query, or nil when no client could send
// it.
func fuzzedRequest(method, path, query string, body []byte) *http.Request {
	if query != "" {
		path += "?" + query
	}
	req, err := http.NewRequest(method, path, bytes.NewReader(body))
	if err != nil {
		return nil
	}
	req.Header.Set("Content-Type", "application/json")
	return req
}

// stateOf reads what paths answer through h, one string: what a request could change.
func stateOf(h http.Handler, paths ...string) func() string {
	return func() string {
		var b strings.Builder
		for _, p := range paths {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest("GET", p, nil))
			b.WriteString(w.Body.String())
		}
		return b.String()
	}
}

// serveChecked serves a fuzzed request and checks what every request must get: no 5xx; an
// error that is the API's JSON, with a known code answered with that code's status; and a
// request that fails changes nothing that state reads.
func serveChecked(t *testing.T, h http.Handler, req *http.Request, body []byte, state func() string) {
	t.Helper()
	what := fmt.Sprintf("%s %s %q", req.Method, req.URL, body)
	before := state()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code >= 500 {
		t.Fatalf("%s: %d %s", what, w.Code, w.Body)
	}
	if w.Code < 400 {
		return
	}
	var out struct {
		Error struct{ Code, Message string }
	}
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || out.Error.Message == "" {
		t.Fatalf("%s: %d %q is not the API's error", what, w.Code, w.Body)
	}
	if want, ok := lhttp.Statuses[out.Error.Code]; !ok || want != w.Code {
		t.Fatalf("%s: %d with code %q", what, w.Code, out.Error.Code)
	}
	if after := state(); after != before {
		t.Fatalf("%s failed (%d %s) but changed the state:\nbefore %s\nafter  %s", what, w.Code, w.Body, before, after)
	}
}

// FuzzMemberToken sends GET /v1/whoami with a member token whose header and claims the fuzzer
// makes up (in them, "$iat" and "$exp" stand for now plus the offsets iatOff and expOff, in
// seconds), signed by HS256 with the secret of k2 or of k1, with a stranger's, or, for sign 3,
// header as the whole bearer. The server answers 200 or 401 unauthenticated, and a token it
// takes is one signed with the secret its kid names, by HS256, for the audience laurel, with a
// member (sub) laurel accepts, a scope of read or write, boards, and an issue time and an
// expiry at most 24 h apart and not past (30 s of leeway); whoami shows that member, scope,
// boards and expiry.
func FuzzMemberToken(f *testing.F) {
	secrets := map[string][]byte{"k2": currentSecret, "k1": retiredSecret}
	e := start(f, options{cfg: lhttp.Config{
		Keys:   lhttp.Keys{Admin: []string{"admin-key"}},
		Tokens: lhttp.Tokens{Secrets: secrets},
		Logger: slog.New(slog.DiscardHandler),
	}})
	h := e.server.Handler()
	good := `{"sub": "ada", "aud": "laurel", "iat": "$iat", "exp": "$exp", "boards": ["b"], "scope": "write"}`
	for _, seed := range []struct {
		sign            uint8
		header, payload string
		iatOff, expOff  int64
	}{
		{0, `{"alg": "HS256", "typ": "JWT", "kid": "k2"}`, good, 0, 600},
		{1, `{"alg": "HS256", "kid": "k1"}`, good, -60, 86400 - 60},
		{2, `{"alg": "HS256", "kid": "k2"}`, good, 0, 600},
		{0, `{"alg": "none", "kid": "k2"}`, good, 0, 600},
		{0, `{"alg": "HS256"}`, good, 0, 600},
		{0, `{"alg": "HS256", "kid": "k2"}`, `{"sub": "ada", "aud": ["x", "laurel"], "iat": "$iat", "exp": "$exp", "nbf": "$iat", "boards": ["b", "c"], "scope": "read"}`, 20, 40},
		{0, `{"alg": "HS256", "kid": "k2"}`, `{"sub": "ada", "aud": "laurel", "iat": "$iat", "exp": "$exp", "boards": ["b"], "scope": "write"}`, -90000, -10},
		{0, `{"alg": "HS256", "kid": "k2"}`, `{"sub": "a/b", "aud": "laurel", "iat": 1.5e9, "exp": 9223372036, "boards": [], "scope": "admin"}`, 0, 0},
		{3, `eyJhbGciOiJub25lIn0.eyJzdWIiOiJhZGEifQ.`, ``, 0, 0},
	} {
		f.Add(seed.sign, seed.header, seed.payload, seed.iatOff, seed.expOff)
	}
	f.Fuzz(func(t *testing.T, sign uint8, header, payload string, iatOff, expOff int64) {
		now := time.Now().Unix()
		payload = strings.ReplaceAll(payload, `"$iat"`, strconv.FormatInt(now+iatOff%(1<<40), 10))
		payload = strings.ReplaceAll(payload, `"$exp"`, strconv.FormatInt(now+expOff%(1<<40), 10))
		sign %= 4
		token := header
		if sign < 3 {
			secret := []byte("a stranger's secret, 32 bytes or more")
			if sign < 2 {
				secret = secrets[[]string{"k2", "k1"}[sign]]
			}
			unsigned := base64.RawURLEncoding.EncodeToString([]byte(header)) + "." + base64.RawURLEncoding.EncodeToString([]byte(payload))
			mac := hmac.New(sha256.New, secret)
			mac.Write([]byte(unsigned))
			token = unsigned + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
		}
		req := httptest.NewRequest("GET", "/v1/whoami", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		if req.Header.Get("Authorization") != "Bearer "+token {
			return // not a header a client could send
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 200 {
			var out struct {
				Error struct{ Code, Message string }
			}
			if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || w.Code != 401 || out.Error.Code != "unauthenticated" || out.Error.Message == "" {
				t.Fatalf("sign %d %q %q: %d %s", sign, header, payload, w.Code, w.Body)
			}
			return
		}
		var who struct {
			Scope     string   `json:"scope"`
			Member    string   `json:"member"`
			Boards    []string `json:"boards"`
			ExpiresAt string   `json:"expires_at"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &who); err != nil {
			t.Fatalf("whoami: %v: %s", err, w.Body)
		}
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("sign %d %q %q taken (%s): %s", sign, header, payload, w.Body, fmt.Sprintf(format, args...))
		}
		if sign > 1 {
			fail("not signed with a configured secret")
		}
		var hdr struct {
			Alg string `json:"alg"`
			Kid string `json:"kid"`
		}
		if err := json.Unmarshal([]byte(header), &hdr); err != nil || hdr.Alg != "HS256" || hdr.Kid != []string{"k2", "k1"}[sign] {
			fail("header: %+v, %v", hdr, err)
		}
		var claims struct {
			Sub    string          `json:"sub"`
			Aud    json.RawMessage `json:"aud"`
			Iat    json.RawMessage `json:"iat"`
			Exp    json.RawMessage `json:"exp"`
			Nbf    json.RawMessage `json:"nbf"`
			Boards []string        `json:"boards"`
			Scope  string          `json:"scope"`
		}
		if err := json.Unmarshal([]byte(payload), &claims); err != nil {
			fail("claims: %v", err)
		}
		if err := laurel.ValidateMember("sub", claims.Sub); err != nil || who.Member != claims.Sub {
			fail("member %q: %v", claims.Sub, err)
		}
		if claims.Scope != "read" && claims.Scope != "write" || who.Scope != claims.Scope {
			fail("scope %q", claims.Scope)
		}
		if len(claims.Boards) == 0 || !slices.Equal(who.Boards, claims.Boards) {
			fail("boards %q", claims.Boards)
		}
		var aud []string
		if json.Unmarshal(claims.Aud, &aud) != nil {
			var one string
			if err := json.Unmarshal(claims.Aud, &one); err != nil {
				fail("aud %s", claims.Aud)
			}
			aud = []string{one}
		}
		if !slices.Contains(aud, "laurel") {
			fail("aud %s", claims.Aud)
		}
		seconds := func(name string, raw json.RawMessage) float64 {
			var s string
			if json.Unmarshal(raw, &s) != nil {
				s = string(raw)
			}
			x, err := strconv.ParseFloat(s, 64)
			if err != nil {
				fail("%s %s: %v", name, raw, err)
			}
			return x
		}
		iat, exp := seconds("iat", claims.Iat), seconds("exp", claims.Exp)
		const leeway = 30 + 1 // and a second for truncation and the clock's tick
		if exp-iat > 24*3600+1 {
			fail("lives %vs", exp-iat)
		}
		if exp < float64(now)-leeway || iat > float64(time.Now().Unix())+leeway {
			fail("iat %v, exp %v, now %v", iat, exp, now)
		}
		if claims.Nbf != nil && string(claims.Nbf) != "null" && seconds("nbf", claims.Nbf) > float64(time.Now().Unix())+leeway {
			fail("nbf %s", claims.Nbf)
		}
		ms, err := laurel.ParseTime(who.ExpiresAt)
		if err != nil || math.Abs(float64(ms)/1000-exp) > 1 {
			fail("expires_at %q, exp %v: %v", who.ExpiresAt, exp, err)
		}
	})
}

// contestRoutes are the requests FuzzContestRequest varies, past fuzzRoutes: tournaments,
// cohorts and tiers, a closed period's results, histories, boards with contests, webhooks and
// the live stream. {x} is a path segment the fuzzer makes up.
var contestRoutes = []struct{ method, path string }{
	{"GET", "/v1/boards/lg/periods/{x}/results"},
	{"GET", "/v1/boards/cup/periods/{x}/results"},
	{"POST", "/v1/boards/cup/members/{x}/join"},
	{"POST", "/v1/boards/lg/members/{x}/join"},
	{"GET", "/v1/boards/cup/members/{x}/entry"},
	{"GET", "/v1/boards/lg/members/{x}/cohort"},
	{"GET", "/v1/boards/lg/members/{x}/tier"},
	{"GET", "/v1/boards/lg/members/{x}/history"},
	{"GET", "/v1/boards/cup/members/{x}/history"},
	{"PUT", "/v1/boards/lg"},
	{"PUT", "/v1/boards/cup"},
	{"PUT", "/v1/hooks/{x}"},
	{"GET", "/v1/hooks/{x}/deliveries"},
	{"GET", "/v1/hooks/h1/deliveries/{x}"},
	{"POST", "/v1/hooks/h1/deliveries/{x}/replay"},
	{"DELETE", "/v1/hooks/{x}"},
	{"GET", "/v1/boards/lg/stream"},
	{"POST", "/v1/members/{x}/hide"},
	{"GET", "/v1/whoami"},
}

// FuzzContestRequest is FuzzRequest over contestRoutes, on a league of tiered cohorts with a
// closed day and a daily tournament with a run open: the server never answers 5xx, an error is
// the API's JSON error with a known code and the status of that code, and a request that fails
// changes nothing. A stream is sent with its request already canceled, so that it answers
// its first page and ends.
func FuzzContestRequest(f *testing.F) {
	e := start(f, options{cfg: lhttp.Config{Logger: slog.New(slog.DiscardHandler)}})
	e.do("PUT", "/v1/boards/lg", `{"windows": ["day", "all"], "late_limit": "1h",
		"cohorts": {"window": "day", "size": 2, "tiers": ["bronze", "silver"], "promote": 1, "demote": 1},
		"rewards": [{"window": "day", "tier": "silver", "ranks": [1, 1], "reward": {"chest": "silver"}},
			{"window": "day", "tier": "bronze", "ranks": [1, 2], "reward": {"chest": "bronze"}}]}`).must(f, 201)
	e.do("PUT", "/v1/boards/cup", `{"windows": ["day", "all"], "tournament": {"start": "2026-11-22T12:00:00Z", "window": "day",
		"duration": "20h", "join_required": true, "max_members": 3, "max_attempts": 2}}`).must(f, 201)
	e.do("POST", "/v1/boards/lg/events", `{"events": [{"member": "ann", "value": 5}, {"member": "ben", "value": 3}, {"member": "cy", "value": 4}]}`).must(f, 200)
	e.do("PUT", "/v1/hooks/h1", `{"url": "http://127.0.0.1:1/hook", "secret": "0123456789abcdef", "boards": ["lg"]}`).must(f, 201)
	e.clock.Advance(27 * time.Hour) // Monday 13:00: Sunday has closed, Monday's run is open
	e.do("POST", "/v1/boards/cup/members/ada/join", nil).must(f, 201)
	e.do("POST", "/v1/boards/cup/events", `{"member": "ada", "value": 5, "id": "a1"}`).must(f, 200)
	e.do("POST", "/v1/boards/lg/events", `{"events": [{"member": "ann", "value": 2}, {"member": "dee", "value": 7}]}`).must(f, 200)
	for i, seed := range []struct{ seg, query, body string }{
		{"2026-11-22", "window=day&limit=1", ""},
		{"2026-11-23", "window=day&offset=2147483647", ""},
		{"bob", "", ""},
		{"ann", "", ""},
		{"ada", "", ""},
		{"ann", "window=day&period=2026-11-22", ""},
		{"ann", "", ""},
		{"ann", "window=day&limit=5&cohort=ann", ""},
		{"ada", "window=all&cohort=ada", ""},
		{"", "", `{"cohorts": {"window": "day", "size": 3, "tiers": ["bronze", "silver", "gold"], "promote": 1, "demote": 1}}`},
		{"", "", `{"tournament": {"start": "2026-11-22T12:00:00Z", "window": "day", "duration": "2d", "max_attempts": 0}}`},
		{"h2", "", `{"url": "https://example.com/x?y=1", "secret": "0123456789abcdefg", "boards": ["lg", "cup", "lg"]}`},
		{"h1", "state=pending&after=h1:lg:day:2026-11-22:1&limit=5", ""},
		{"h1:lg:day:2026-11-22:1", "", ""},
		{"h1:lg:day:2026-11-22:1", "", ""},
		{"h9", "", ""},
		{"", "window=day&limit=3&cohort=ann&metadata=true", ""},
		{"ann", "", ""},
		{"", "", ""},
	} {
		f.Add(uint8(i), seed.seg, seed.query, []byte(seed.body))
	}
	h := e.server.Handler()
	// state is everything a request could change, read through the API.
	state := stateOf(h, "/v1/boards", "/v1/boards/lg/entries?window=all&limit=1000", "/v1/boards/lg/entries?window=day&limit=1000",
		"/v1/boards/cup/entries?window=day&limit=1000", "/v1/boards/lg/members/ann/cohort", "/v1/boards/lg/members/dee/cohort",
		"/v1/boards/lg/members/ann/tier", "/v1/boards/cup/members/ada/entry", "/v1/hooks", "/v1/hooks/h1/deliveries",
		"/v1/members/ann", "/v1/boards/lg/periods/2026-11-22/results?window=day")
	f.Fuzz(func(t *testing.T, route uint8, seg, query string, body []byte) {
		r := contestRoutes[int(route)%len(contestRoutes)]
		if seg == "" {
			seg = "ann"
		}
		req := fuzzedRequest(r.method, strings.ReplaceAll(r.path, "{x}", url.PathEscape(seg)), query, body)
		if req == nil {
			return // not a request a client could send
		}
		if strings.HasSuffix(r.path, "/stream") {
			ctx, cancel := context.WithCancel(req.Context())
			cancel()
			req = req.WithContext(ctx)
		}
		serveChecked(t, h, req, body, state)
	})
}
