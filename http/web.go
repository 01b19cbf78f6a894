package http

// routeWeb registers the web page's routes.
func (s *Server) routeWeb() {}
