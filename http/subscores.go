package http

import (
	"context"
	"sync"
	"time"

	"github.com/laurel/laurel"
)

// subscoreTTL is how long the server trusts what it read of whether a board has a subscore.
// A board's subscore is immutable, so only a board deleted and made again under its id can
// change it: through this server, at once (forget); through another node of the scale-out
// store, within this long — as a node reads a board's competitions (package competition).
const subscoreTTL = time.Second

// subscores remembers which boards have a subscore, for the answers that show entries'
// subscores and read no page that says it: a write's standings and history points
// (docs/api.md). A page, a member entry and a period's results say it themselves.
type subscores struct {
	svc   laurel.Service
	mu    sync.Mutex
	known map[string]subscoreRead
}

type subscoreRead struct {
	has  bool
	read time.Time
}

// has reports whether board has a subscore, as read within subscoreTTL. When the board cannot
// be read, the last read serves, or none: the answer is of a write or read that succeeded,
// and its shape is the board's, which a board not found has not.
func (s *subscores) has(ctx context.Context, board string) bool {
	s.mu.Lock()
	r, ok := s.known[board]
	s.mu.Unlock()
	if ok && time.Since(r.read) < subscoreTTL {
		return r.has
	}
	read := time.Now()
	info, err := s.svc.Board(ctx, board)
	if err != nil {
		return r.has && laurel.ErrorCode(err) != laurel.ENotFound
	}
	s.mu.Lock()
	if s.known == nil {
		s.known = make(map[string]subscoreRead)
	}
	s.known[board] = subscoreRead{has: info.Subscore != nil, read: read}
	s.mu.Unlock()
	return info.Subscore != nil
}

// forget drops what is known of board: it was created, changed or deleted here.
func (s *subscores) forget(board string) {
	s.mu.Lock()
	delete(s.known, board)
	s.mu.Unlock()
}

// ofResults returns the boards of a submit's results whose standings show subscores, nil
// for none (no allocation for boards without): those with a subscore, among the boards of
// results with standings.
func (s *subscores) ofResults(ctx context.Context, results []laurel.EventResult) map[string]bool {
	var out map[string]bool
	last := ""
	for i := range results {
		b := results[i].Board
		if b == last || len(results[i].Entries) == 0 {
			continue
		}
		last = b
		if !out[b] && s.has(ctx, b) {
			if out == nil {
				out = make(map[string]bool)
			}
			out[b] = true
		}
	}
	return out
}
