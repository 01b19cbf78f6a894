package embedded

import (
	"slices"

	"github.com/laurel/laurel"
)

var _ laurel.Watcher = (*Engine)(nil)

// Watch calls changed after every commit that changed what a read can see, with the ids of the
// boards it touched, or nil when the change may show on any board (a profile, a hidden mark,
// a deleted board). It implements laurel.Watcher. changed runs on the writer: it must return
// at once, or every write waits.
func (e *Engine) Watch(changed func(boards []string)) (stop func()) {
	e.watchMu.Lock()
	defer e.watchMu.Unlock()
	if e.watchers == nil {
		e.watchers = make(map[int]func([]string))
	}
	e.watchSeq++
	id := e.watchSeq
	e.watchers[id] = changed
	return func() {
		e.watchMu.Lock()
		defer e.watchMu.Unlock()
		delete(e.watchers, id)
	}
}

// notify tells the watchers what the committed tx changed.
func (e *Engine) notify(tx *txn) {
	if len(tx.touched) == 0 && !tx.global {
		return
	}
	e.watchMu.Lock()
	defer e.watchMu.Unlock()
	if len(e.watchers) == 0 {
		return
	}
	var boards []string
	if !tx.global {
		for b := range tx.touched {
			boards = append(boards, b.cfg.ID)
		}
		slices.Sort(boards)
	}
	for _, f := range e.watchers {
		f(boards)
	}
}
