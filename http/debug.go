package http

import (
	"net/http/pprof"
)

// routeDebug serves Go's profiles of the running server (net/http/pprof) to admin keys: the
// CPU, heap, goroutine, mutex and block profiles and the execution trace, for when /metrics
// says something is slow. `laurel bench` reads the live heap through /debug/pprof/heap?gc=1.
func (s *Server) routeDebug() {
	s.handle(debugRoutes, scopeAdmin, pprof.Index)
	s.handle(debugRoutes+"cmdline", scopeAdmin, pprof.Cmdline)
	s.handle(debugRoutes+"profile", scopeAdmin, pprof.Profile)
	s.handle(debugRoutes+"symbol", scopeAdmin, pprof.Symbol)
	s.handle(debugRoutes+"trace", scopeAdmin, pprof.Trace)
}

// debugRoutes begins the profiles' routes. They last the seconds asked for, not the
// request timeout: net/http/pprof refuses a duration past the server's write timeout.
const debugRoutes = "GET /debug/pprof/"
