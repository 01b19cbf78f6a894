package laurel

import (
	"slices"
	"sync"
)

// Watcher is implemented by a Service that can tell when boards change, so that live streams
// need not poll. Watch calls changed after every change is applied, with the boards it may
// have altered; nil means any board (a profile or a hidden flag changed). changed runs on the
// service's writer, so it must return at once. The returned function stops the calls.
type Watcher interface {
	Watch(changed func(boards []string)) (stop func())
}

// MemberWatcher is implemented by a Service that can also tell whose entries a change moved,
// so that a member's live feed can name who passed it without reading the board. WatchMembers
// calls changed as Watch does, with what changed on each board; changed must return at once.
type MemberWatcher interface {
	WatchMembers(changed func([]Changed)) (stop func())
}

// Changed is what a change did to one board.
type Changed struct {
	Board string // "": any board may show it (a profile, a hidden mark, a deleted board)
	// Members are those whose entries on Board the change may have moved, in any window; nil:
	// any member (a period that opened or closed, a rolling window that slid, an erasure).
	// With Board "", nil says that entries on any board may have moved, and not nil (empty)
	// that none did (a profile: names show on every board).
	Members []string
}

// Watchers is the list of functions a Watcher and a MemberWatcher call: a store keeps one,
// hands Watch and WatchMembers on to it, and calls Notify after each change. The zero value is
// an empty list.
type Watchers struct {
	mu      sync.Mutex
	boards  map[int]func(boards []string)
	members map[int]func([]Changed)
	next    int
}

// Watch adds changed to the list until stop is called.
func (w *Watchers) Watch(changed func(boards []string)) (stop func()) {
	return add(w, &w.boards, changed)
}

// WatchMembers adds changed to the list until stop is called.
func (w *Watchers) WatchMembers(changed func([]Changed)) (stop func()) {
	return add(w, &w.members, changed)
}

func add[F any](w *Watchers, m *map[int]F, f F) (stop func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if *m == nil {
		*m = make(map[int]F)
	}
	w.next++
	id := w.next
	(*m)[id] = f
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(*m, id)
	}
}

// Notify calls every function of the list with what changes returns, and calls changes only
// when the list is not empty: with members true when a function wants the members named.
func (w *Watchers) Notify(changes func(members bool) []Changed) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.boards) == 0 && len(w.members) == 0 {
		return
	}
	ch := changes(len(w.members) > 0)
	if len(ch) == 0 {
		return
	}
	for _, f := range w.members {
		f(ch)
	}
	if len(w.boards) == 0 {
		return
	}
	var boards []string
	for _, c := range ch {
		if c.Board == "" {
			boards = nil
			break
		}
		boards = append(boards, c.Board)
	}
	slices.Sort(boards)
	boards = slices.Compact(boards)
	for _, f := range w.boards {
		f(boards)
	}
}
