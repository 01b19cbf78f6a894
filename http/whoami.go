package http

import (
	"net/http"

	"github.com/laurel/laurel"
)

// whoamiRoute tells a client what its bearer may do, so that a console can tell a read key
// from an admin key before it offers buttons that would be refused, and a game client can
// see when its member token expires.
const whoamiRoute = "GET /v1/whoami"

type whoamiJSON struct {
	Scope     string   `json:"scope"`                // read, write or admin
	Open      bool     `json:"open,omitempty"`       // no key is configured: anyone is admin
	Member    string   `json:"member,omitempty"`     // a member token's member
	Boards    []string `json:"boards,omitempty"`     // a member token's boards
	ExpiresAt string   `json:"expires_at,omitempty"` // a member token's expiry
}

func (s *Server) handleWhoami(w http.ResponseWriter, r *http.Request) {
	if g := grantOf(r); g != nil {
		out := whoamiJSON{Scope: "read", Member: g.member, Boards: g.boards, ExpiresAt: laurel.FormatTime(g.expires.UnixMilli())}
		if g.write {
			out.Scope = "write"
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	if s.cfg.Open() {
		writeJSON(w, http.StatusOK, whoamiJSON{Scope: "admin", Open: true})
		return
	}
	sc := scopeRead // authorize let it in: a key, or public reads without one
	if key, ok := bearer(r); ok {
		sc = max(sc, s.keyScope(key))
	}
	writeJSON(w, http.StatusOK, whoamiJSON{Scope: scopeName(sc)})
}
