package http_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	lhttp "github.com/laurel/laurel/http"
)

var (
	currentSecret = []byte("0123456789abcdef0123456789abcdef-current")
	retiredSecret = []byte("0123456789abcdef0123456789abcdef-retired")
)

// mint signs claims as a game's server would, with the key named kid.
func mint(t *testing.T, kid string, secret []byte, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodHS256, claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(secret)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// claimsFor are a valid write token's claims for member on boards, for ten minutes.
func claimsFor(member string, boards ...string) jwt.MapClaims {
	now := time.Now()
	return jwt.MapClaims{"sub": member, "aud": "laurel", "iat": now.Unix(), "exp": now.Add(10 * time.Minute).Unix(),
		"boards": boards, "scope": "write"}
}

// TestMemberTokens: a game client holding a member token submits for its member to its
// boards and reads them, and nothing else; a forged, expired, foreign or overreaching token
// is refused and changes nothing.
func TestMemberTokens(t *testing.T) {
	e := start(t, options{cfg: lhttp.Config{
		Keys:   lhttp.Keys{Admin: []string{"admin-key"}},
		Tokens: lhttp.Tokens{Secrets: map[string][]byte{"k2": currentSecret, "k1": retiredSecret}},
	}})
	e.key = "admin-key"
	e.do("PUT", "/v1/boards/solvers", map[string]any{}).must(t, 201)
	e.do("PUT", "/v1/boards/other", map[string]any{}).must(t, 201)
	e.do("POST", "/v1/boards/solvers/events", map[string]any{"member": "bob", "value": 7}).must(t, 200)

	ada := mint(t, "k2", currentSecret, claimsFor("ada", "solvers"))
	// Its own member, its board: stored, with ranks.
	r := e.doKey(ada, "POST", "/v1/boards/solvers/events", map[string]any{"member": "ada", "value": 5, "id": "a1"}).must(t, 200)
	if r.get("results", 0, "status") != "applied" {
		t.Fatalf("submit with a token: %s", r.raw)
	}
	e.doKey(ada, "POST", "/v1/events", map[string]any{"events": []map[string]any{{"board": "solvers", "member": "ada", "value": 1}}}).must(t, 200)
	// It reads its board, other members included.
	e.doKey(ada, "GET", "/v1/boards/solvers/entries", nil).must(t, 200)
	e.doKey(ada, "GET", "/v1/boards/solvers/members/bob", nil).must(t, 200)
	e.doKey(ada, "GET", "/v1/boards/solvers/members/ada/history", nil).must(t, 200)
	// A league's client shows the player their cohort and tier.
	e.do("PUT", "/v1/boards/league", map[string]any{"windows": []string{"day"},
		"cohorts": map[string]any{"window": "day", "size": 3, "tiers": []string{"bronze", "silver"}}}).must(t, 201)
	e.do("POST", "/v1/boards/league/events", map[string]any{"member": "ada", "value": 2}).must(t, 200)
	inLeague := mint(t, "k2", currentSecret, claimsFor("ada", "league"))
	if c := e.doKey(inLeague, "GET", "/v1/boards/league/members/ada/cohort", nil).must(t, 200); c.get("members", 0) != "ada" {
		t.Errorf("ada's cohort with her token: %s", c.raw)
	}
	if c := e.doKey(inLeague, "GET", "/v1/boards/league/members/ada/tier", nil).must(t, 200); c.get("tier") != "bronze" {
		t.Errorf("ada's tier with her token: %s", c.raw)
	}
	// A key rotated out but still configured verifies; the retired one goes once removed.
	e.doKey(mint(t, "k1", retiredSecret, claimsFor("ada", "solvers")), "GET", "/v1/boards/solvers/entries", nil).must(t, 200)

	for _, tc := range []struct {
		name, token, method, path string
		body                      any
		status                    int
		code, field               string
	}{
		{"another member's events", ada, "POST", "/v1/boards/solvers/events", map[string]any{"member": "bob", "value": 1000}, 403, "permission_denied", "member"},
		{"another member in a batch", ada, "POST", "/v1/boards/solvers/events", map[string]any{"events": []map[string]any{{"member": "ada", "value": 1}, {"member": "bob", "value": 1000}}}, 403, "permission_denied", "events[1].member"},
		{"a board it does not cover", ada, "POST", "/v1/boards/other/events", map[string]any{"member": "ada", "value": 1}, 403, "permission_denied", ""},
		{"a board it does not cover, cross-board", ada, "POST", "/v1/events", map[string]any{"events": []map[string]any{{"board": "other", "member": "ada", "value": 1}}}, 403, "permission_denied", "events[0].board"},
		{"reading a board it does not cover", ada, "GET", "/v1/boards/other/entries", nil, 403, "permission_denied", ""},
		{"retracting", ada, "DELETE", "/v1/boards/solvers/events/a1", nil, 403, "permission_denied", ""},
		{"setting a profile", ada, "PUT", "/v1/members/ada", map[string]any{"name": "Ada"}, 403, "permission_denied", ""},
		{"choosing its events' time", ada, "POST", "/v1/events", map[string]any{"events": []map[string]any{{"board": "solvers", "member": "ada", "value": 1000, "ts": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)}}}, 403, "permission_denied", "events[0].ts"},
		{"setting a profile's name with an event", ada, "POST", "/v1/boards/solvers/events", map[string]any{"member": "ada", "value": 1, "name": "Admin — official"}, 403, "permission_denied", "name"},
		{"administration", ada, "PUT", "/v1/boards/solvers", map[string]any{}, 403, "permission_denied", ""},
		{"listing boards", ada, "GET", "/v1/boards", nil, 403, "permission_denied", ""},
		{"importing", ada, "POST", "/v1/boards/solvers/events?import=true", map[string]any{"member": "ada", "value": 1}, 403, "permission_denied", "import"},
		{"a read-only token writing", mint(t, "k2", currentSecret, with(claimsFor("ada", "solvers"), "scope", "read")), "POST", "/v1/boards/solvers/events", map[string]any{"member": "ada", "value": 1}, 403, "permission_denied", ""},
		{"forged: signed with another secret", mint(t, "k2", []byte("not-the-secret-not-the-secret-not"), claimsFor("ada", "solvers")), "POST", "/v1/boards/solvers/events", map[string]any{"member": "ada", "value": 1}, 401, "unauthenticated", ""},
		{"forged: unsigned (alg none)", unsigned(t, claimsFor("ada", "solvers")), "GET", "/v1/boards/solvers/entries", nil, 401, "unauthenticated", ""},
		{"an unknown key id", mint(t, "k9", currentSecret, claimsFor("ada", "solvers")), "GET", "/v1/boards/solvers/entries", nil, 401, "unauthenticated", ""},
		{"no key id, with two keys configured", mint(t, "", currentSecret, claimsFor("ada", "solvers")), "GET", "/v1/boards/solvers/entries", nil, 401, "unauthenticated", ""},
		{"expired", mint(t, "k2", currentSecret, with(with(claimsFor("ada", "solvers"), "exp", time.Now().Add(-time.Minute).Unix()), "iat", time.Now().Add(-time.Hour).Unix())), "POST", "/v1/boards/solvers/events", map[string]any{"member": "ada", "value": 1}, 401, "unauthenticated", ""},
		{"no expiry", mint(t, "k2", currentSecret, without(claimsFor("ada", "solvers"), "exp")), "GET", "/v1/boards/solvers/entries", nil, 401, "unauthenticated", ""},
		{"living longer than a day", mint(t, "k2", currentSecret, with(claimsFor("ada", "solvers"), "exp", time.Now().Add(48*time.Hour).Unix())), "GET", "/v1/boards/solvers/entries", nil, 401, "unauthenticated", ""},
		{"for another audience", mint(t, "k2", currentSecret, with(claimsFor("ada", "solvers"), "aud", "another-service")), "GET", "/v1/boards/solvers/entries", nil, 401, "unauthenticated", ""},
		{"no member", mint(t, "k2", currentSecret, without(claimsFor("ada", "solvers"), "sub")), "GET", "/v1/boards/solvers/entries", nil, 401, "unauthenticated", ""},
		{"a tampered payload", tamper(ada), "POST", "/v1/boards/solvers/events", map[string]any{"member": "bob", "value": 1}, 401, "unauthenticated", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.doKey(tc.token, tc.method, tc.path, tc.body).isError(t, tc.status, tc.code, tc.field)
		})
	}
	// Why a token has no secret to check it is said plainly, not in the JWT library's words.
	for kid, want := range map[string]string{"k9": `invalid member token: unknown key id "k9"`, "": "invalid member token: the token names no key (kid), and several are configured"} {
		r := e.doKey(mint(t, kid, currentSecret, claimsFor("ada", "solvers")), "GET", "/v1/boards/solvers/entries", nil).isError(t, 401, "unauthenticated", "")
		if got := r.get("error", "message"); got != want {
			t.Errorf("kid %q: message %q, want %q", kid, got, want)
		}
	}
	// Nothing refused was stored: bob still has 7, ada her 6, and "other" no one.
	if got := e.do("GET", "/v1/boards/solvers/members/bob", nil).must(t, 200).get("entry", "score"); got != float64(7) {
		t.Errorf("bob's score %v, want 7", got)
	}
	if got := e.do("GET", "/v1/boards/solvers/members/ada", nil).must(t, 200).get("entry", "score"); got != float64(6) {
		t.Errorf("ada's score %v, want 6", got)
	}
	if got := e.do("GET", "/v1/boards/solvers/members/ada", nil).must(t, 200).get("entry", "name"); got != nil {
		t.Errorf("ada's name %v, want none", got)
	}
	if got := e.do("GET", "/v1/boards/other/entries", nil).must(t, 200).get("total"); got != float64(0) {
		t.Errorf("board other holds %v members, want 0", got)
	}
}

// With member tokens configured and no key, the server is not open: a request needs a token.
func TestMemberTokensCloseTheServer(t *testing.T) {
	e := start(t, options{cfg: lhttp.Config{Tokens: lhttp.Tokens{Secrets: map[string][]byte{"k": currentSecret}}}})
	e.do("PUT", "/v1/boards/solvers", map[string]any{}).isError(t, 401, "unauthenticated", "")
	e.do("GET", "/v1/boards", nil).isError(t, 401, "unauthenticated", "")
	// One secret configured: a token without a kid is checked against it.
	tok := mint(t, "", currentSecret, with(claimsFor("ada", "solvers"), "scope", "read"))
	e.doKey(tok, "GET", "/v1/boards/solvers/entries", nil).isError(t, 404, "not_found", "board")
}

func with(c jwt.MapClaims, k string, v any) jwt.MapClaims {
	out := jwt.MapClaims{}
	for key, val := range c {
		out[key] = val
	}
	out[k] = v
	return out
}

func without(c jwt.MapClaims, k string) jwt.MapClaims {
	out := with(c, k, nil)
	delete(out, k)
	return out
}

func unsigned(t *testing.T, c jwt.MapClaims) string {
	s, err := jwt.NewWithClaims(jwt.SigningMethodNone, c).SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// tamper puts another payload (claims for bob) between a token's header and signature.
func tamper(token string) string {
	parts := strings.Split(token, ".")
	other, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, claimsFor("bob", "solvers")).SigningString()
	return parts[0] + "." + strings.Split(other, ".")[1] + "." + parts[2]
}

// TestWhoami: any bearer learns what it may do — a key its scope, a member token its member,
// boards and expiry — so that a console or a game client need not find out by being refused.
func TestWhoami(t *testing.T) {
	e := start(t, options{cfg: lhttp.Config{
		Keys:   lhttp.Keys{Admin: []string{"admin-key"}, Write: []string{"write-key"}, Read: []string{"read-key"}},
		Tokens: lhttp.Tokens{Secrets: map[string][]byte{"k2": currentSecret}},
	}})
	for key, want := range map[string]string{"admin-key": "admin", "write-key": "write", "read-key": "read"} {
		e.doKey(key, "GET", "/v1/whoami", nil).must(t, 200).is(t, `{"scope": "`+want+`"}`)
	}
	e.doKey("", "GET", "/v1/whoami", nil).isError(t, 401, "unauthenticated", "")
	e.doKey("nope", "GET", "/v1/whoami", nil).isError(t, 401, "unauthenticated", "")

	claims := claimsFor("ada", "solvers", "daily")
	exp := time.Unix(claims["exp"].(int64), 0).UTC().Format("2006-01-02T15:04:05.000Z") // as every time the API answers
	e.doKey(mint(t, "k2", currentSecret, claims), "GET", "/v1/whoami", nil).must(t, 200).
		is(t, `{"scope": "write", "member": "ada", "boards": ["solvers", "daily"], "expires_at": "`+exp+`"}`)

	start(t, options{}).doKey("", "GET", "/v1/whoami", nil).must(t, 200).is(t, `{"scope": "admin", "open": true}`)
	public := start(t, options{cfg: lhttp.Config{Keys: lhttp.Keys{Admin: []string{"admin-key"}}, PublicRead: true}})
	public.doKey("", "GET", "/v1/whoami", nil).must(t, 200).is(t, `{"scope": "read"}`)
	public.doKey("nope", "GET", "/v1/whoami", nil).isError(t, 401, "unauthenticated", "")
}

// TestMemberTokenStreamEnds: a live stream opened with a member token ends when the token
// does (its 30 s of skew included), saying why; it went on being fed.
func TestMemberTokenStreamEnds(t *testing.T) {
	e := start(t, options{cfg: lhttp.Config{
		Keys:   lhttp.Keys{Admin: []string{"admin-key"}},
		Tokens: lhttp.Tokens{Secrets: map[string][]byte{"k2": currentSecret}},
	}})
	e.key = "admin-key"
	e.do("PUT", "/v1/boards/solvers", map[string]any{}).must(t, 201)
	// Past its exp, within the skew: good for a second at most.
	e.key = mint(t, "k2", currentSecret, with(claimsFor("ada", "solvers"), "exp", time.Now().Add(-29*time.Second).Unix()))
	ch, res := e.openStream("/v1/boards/solvers/stream")
	if res.StatusCode != 200 {
		t.Fatalf("stream with a token: %d", res.StatusCode)
	}
	var got []string
	timeout := time.After(10 * time.Second)
	for done := false; !done; {
		select {
		case ev, ok := <-ch:
			if !ok {
				done = true
				break
			}
			got = append(got, ev.event)
			if ev.event == "error" && !strings.Contains(ev.data, `"unauthenticated"`) {
				t.Errorf("the stream's end: %s", ev.data)
			}
		case <-timeout:
			t.Fatalf("the stream outlived its token by 10 s; events %q", got)
		}
	}
	if !slices.Equal(got, []string{"page", "error"}) {
		t.Fatalf("events %q, want a page, then the error that ends it", got)
	}
}
