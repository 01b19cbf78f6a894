package embedded

import (
	"slices"

	"github.com/laurel/laurel"
)

var _ laurel.Watcher = (*Store)(nil)

// Watch calls changed after every commit that changed what a read can see, with the ids of the
// boards it touched, or nil when the change may show on any board (a profile, a hidden mark,
// a deleted board). It implements laurel.Watcher. changed runs on the writer: it must return
// at once, or every write waits.
func (e *Store) Watch(changed func(boards []string)) (stop func()) {
	return e.watchers.Watch(changed)
}

// notify tells the watchers what the committed tx changed.
func (e *Store) notify(tx *txn) {
	if len(tx.touched) == 0 && !tx.global {
		return
	}
	e.watchers.Notify(func() []string {
		if tx.global {
			return nil
		}
		boards := make([]string, 0, len(tx.touched))
		for b := range tx.touched {
			boards = append(boards, b.cfg.ID)
		}
		slices.Sort(boards)
		return boards
	})
}
