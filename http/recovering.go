package http

import (
	"net/http"

	"github.com/laurel/laurel"
)

// Recovering answers as laurel does while its store recovers, or waits for its backends,
// before a Server exists: /healthz is 200 (the process runs), everything else 503
// unavailable, /readyz included, saying why.
func Recovering(why string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
			return
		}
		w.Header().Set("Retry-After", "1") // as every 503 of laurel's
		writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: errorJSON{
			Code: laurel.EUnavailable, Message: why + "; not ready yet"}})
	})
}
