package http

import (
	"net/http"
	"slices"

	"github.com/laurel/laurel"
)

// A game's web client calls laurel from its own origin, with a member token in the
// Authorization header: the browser first asks (a preflight OPTIONS) whether laurel takes such
// a request from that origin, and hides the answer of any request laurel did not allow.
// Config.CORSOrigins names the origins allowed; there are none by default, so that only
// laurel's own page and non-browser clients call it.

// corsMaxAge is how long (s) a browser may keep a preflight's answer.
const corsMaxAge = "600"

// cors adds the CORS headers an allowed origin needs, and answers preflight requests itself,
// those of other origins with 403; it reports whether it answered.
func (s *Server) cors(w http.ResponseWriter, r *http.Request) bool {
	origins := s.cfg.CORSOrigins
	origin := r.Header.Get("Origin")
	preflight := r.Method == http.MethodOptions && origin != "" && r.Header.Get("Access-Control-Request-Method") != ""
	h := w.Header()
	anyOrigin := slices.Contains(origins, "*")
	if len(origins) > 0 && !anyOrigin {
		h.Add("Vary", "Origin") // the answer depends on who asks: caches must keep them apart
	}
	if origin == "" || !(anyOrigin || slices.Contains(origins, origin)) {
		if preflight { // refused plainly, rather than 405 for a method no route takes
			s.writeError(w, r, laurel.Errorf(laurel.EPermissionDenied, "requests from origin %q are not allowed (-cors-origins)", origin))
			return true
		}
		return false
	}
	if anyOrigin {
		origin = "*" // no cookies are used: a key or token travels in the header
	}
	h.Set("Access-Control-Allow-Origin", origin)
	if preflight {
		h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE")
		h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
		h.Set("Access-Control-Max-Age", corsMaxAge)
		w.WriteHeader(http.StatusNoContent)
		return true
	}
	h.Set("Access-Control-Expose-Headers", "Retry-After")
	return false
}
