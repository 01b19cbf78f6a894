package http

import (
	"net/http/pprof"
)

// routeDebug serves Go's profiles of the running server (net/http/pprof) to admin keys: the
// CPU, heap, goroutine, mutex and block profiles and the execution trace, for when /metrics
// says something is slow. `laurel bench` reads the live heap through /debug/pprof/heap?gc=1.
func (s *Server) routeDebug() {
	s.handle("GET /debug/pprof/", scopeAdmin, pprof.Index)
	s.handle("GET /debug/pprof/cmdline", scopeAdmin, pprof.Cmdline)
	s.handle("GET /debug/pprof/profile", scopeAdmin, pprof.Profile)
	s.handle("GET /debug/pprof/symbol", scopeAdmin, pprof.Symbol)
	s.handle("GET /debug/pprof/trace", scopeAdmin, pprof.Trace)
}
