package http

import (
	"net/http"

	"github.com/laurel/laurel"
)

// Recovering answers as laurel does while its store recovers, before a Server exists: /healthz
// is 200 (the process runs), everything else 503 unavailable, /readyz included.
func Recovering() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
			return
		}
		w.Header().Set("Retry-After", "1") // as every 503 of laurel's
		writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: errorJSON{
			Code: laurel.EUnavailable, Message: "recovering the store; not ready yet"}})
	})
}
