package http

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/laurel/laurel"
)

// Member tokens let a game client talk to laurel without a key: the game's own server mints a
// short-lived token (a JWT, HS256) for one member and some boards, and the client sends it as
// its bearer. laurel checks the signature against the configured secrets (several, named by
// the token's "kid", so that secrets rotate), the expiry, the audience, and then that the
// request is one the token allows: reading its boards, and — with scope "write" — submitting
// events of its own member to them. Everything else is refused. See docs/api.md, "Member
// tokens".

// Tokens configures member tokens. A zero value (no secrets) accepts none.
type Tokens struct {
	// Secrets are the HMAC secrets tokens are signed with, by key id ("kid" in the token's
	// header). A token without a kid is tried against each. Keep two while rotating.
	Secrets map[string][]byte
	// Audience is the "aud" every token must name; empty is "laurel".
	Audience string
	// MaxLifetime bounds exp − iat; zero is 24 h. A token without iat is refused.
	MaxLifetime time.Duration
}

// MinTokenSecret is the shortest secret accepted: 256 bits, HS256's own size.
const MinTokenSecret = 32

func (t Tokens) enabled() bool { return len(t.Secrets) > 0 }

// TokenClaims are what a member token says.
type TokenClaims struct {
	jwt.RegisteredClaims
	// Boards are the boards the token may read and, with scope write, submit to.
	Boards []string `json:"boards"`
	// Scope is "read" or "write".
	Scope string `json:"scope"`
}

// grant is what a verified token allows, carried in the request's context.
type grant struct {
	member  string
	boards  []string
	write   bool
	expires time.Time
}

type grantKey struct{}

func grantOf(r *http.Request) *grant {
	g, _ := r.Context().Value(grantKey{}).(*grant)
	return g
}

// looksLikeToken tells a JWT (three base64url parts) from an API key, which has no dots.
func looksLikeToken(bearer string) bool { return strings.Count(bearer, ".") == 2 }

// tokenSkew is the clock skew allowed between the game's server, which mints tokens, and
// laurel: a token is taken that long past its exp (and before its iat).
const tokenSkew = 30 * time.Second

// verifyToken checks a member token and returns its grant; the error says why it is refused.
func (t Tokens) verifyToken(raw string, now time.Time) (*grant, error) {
	aud := t.Audience
	if aud == "" {
		aud = "laurel"
	}
	maxLife := t.MaxLifetime
	if maxLife == 0 {
		maxLife = 24 * time.Hour
	}
	var claims TokenClaims
	_, err := jwt.ParseWithClaims(raw, &claims, func(tok *jwt.Token) (any, error) {
		kid, _ := tok.Header["kid"].(string)
		if kid == "" {
			if len(t.Secrets) == 1 {
				for _, s := range t.Secrets {
					return s, nil
				}
			}
			return nil, tokenKeyError("the token names no key (kid), and several are configured")
		}
		s, ok := t.Secrets[kid]
		if !ok {
			return nil, tokenKeyError(fmt.Sprintf("unknown key id %q", kid))
		}
		return s, nil
	}, jwt.WithValidMethods([]string{"HS256"}), jwt.WithAudience(aud), jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(), jwt.WithLeeway(tokenSkew), jwt.WithTimeFunc(func() time.Time { return now }))
	var keyErr tokenKeyError
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return nil, errors.New("the token has expired")
	case errors.As(err, &keyErr):
		return nil, keyErr // without the library's "token is unverifiable: error while executing keyfunc"
	case err != nil:
		return nil, err
	case claims.Subject == "":
		return nil, errors.New("the token names no member (sub)")
	case claims.IssuedAt == nil:
		return nil, errors.New("the token has no issue time (iat)")
	case claims.ExpiresAt.Sub(claims.IssuedAt.Time) > maxLife:
		return nil, fmt.Errorf("the token lives longer than %v", maxLife)
	case claims.Scope != "read" && claims.Scope != "write":
		return nil, fmt.Errorf("the token's scope is %q, not read or write", claims.Scope)
	case len(claims.Boards) == 0:
		return nil, errors.New("the token names no board")
	}
	if err := laurel.ValidateMember("sub", claims.Subject); err != nil {
		return nil, err
	}
	return &grant{member: claims.Subject, boards: claims.Boards, write: claims.Scope == "write", expires: claims.ExpiresAt.Time}, nil
}

// tokenKeyError is why no secret checks a token's signature.
type tokenKeyError string

func (e tokenKeyError) Error() string { return string(e) }

// tokenRoutes are the routes a member token may use, and the scope each takes: reads of a
// board, and submits. Profiles, retractions, listings and administration take a key.
var tokenRoutes = map[string]scope{
	"GET /v1/boards/{board}":                          scopeRead,
	"GET /v1/boards/{board}/entries":                  scopeRead,
	"GET /v1/boards/{board}/members/{member}":         scopeRead,
	"GET /v1/boards/{board}/members/{member}/around":  scopeRead,
	"POST /v1/boards/{board}/lookup":                  scopeRead,
	"GET /v1/boards/{board}/rank":                     scopeRead,
	"GET /v1/boards/{board}/distribution":             scopeRead,
	"GET /v1/boards/{board}/periods":                  scopeRead,
	"GET /v1/boards/{board}/members/{member}/history": scopeRead,
	streamRoute:                      scopeRead,
	memberStreamRoute:                scopeRead,
	whoamiRoute:                      scopeRead,
	"POST /v1/boards/{board}/events": scopeWrite,
	"POST /v1/events":                scopeWrite,
	"GET /v1/boards/{board}/periods/{period}/results": scopeRead,
	"GET /v1/boards/{board}/members/{member}/entry":   scopeRead,
	"POST /v1/boards/{board}/members/{member}/join":   scopeWrite,
	"GET /v1/boards/{board}/members/{member}/cohort":  scopeRead,
	"GET /v1/boards/{board}/members/{member}/tier":    scopeRead,
}

// allows reports whether g may use the route of r; the events of a submit are checked once
// decoded (allowsEvents).
func (g *grant) allows(r *http.Request) error {
	sc, ok := tokenRoutes[r.Pattern]
	if !ok {
		return laurel.Errorf(laurel.EPermissionDenied, "a member token cannot do this: it takes a key")
	}
	if sc == scopeWrite && !g.write {
		return laurel.Errorf(laurel.EPermissionDenied, "this member token may only read")
	}
	if b := r.PathValue("board"); b != "" && !slices.Contains(g.boards, b) {
		return laurel.Errorf(laurel.EPermissionDenied, "this member token does not cover board %q", b)
	}
	return nil
}

// allowsEvents reports whether g may submit events: each of its own member, to its boards,
// naming no one (an event's name sets its member's profile, which takes a key: else a player
// could call themself anything the game's server would refuse), at the server's time (a
// player's ts could score in a period or tournament run already over, within late_limit).
func (g *grant) allowsEvents(events []laurel.Event) error {
	for i, ev := range events {
		if ev.Member != g.member {
			return laurel.InEvent(i, laurel.FieldErrorf(laurel.EPermissionDenied, "member", "a member token submits for its own member (%q) only", g.member))
		}
		if !slices.Contains(g.boards, ev.Board) {
			return laurel.InEvent(i, laurel.FieldErrorf(laurel.EPermissionDenied, "board", "this member token does not cover board %q", ev.Board))
		}
		if ev.Name != nil {
			return laurel.InEvent(i, laurel.FieldErrorf(laurel.EPermissionDenied, "name", "a member token cannot set a name: profiles take a key"))
		}
		if ev.HasTS {
			return laurel.InEvent(i, laurel.FieldErrorf(laurel.EPermissionDenied, "ts", "a member token's events take the server's time: ts takes a key"))
		}
	}
	return nil
}

func withGrant(r *http.Request, g *grant) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), grantKey{}, g))
}
