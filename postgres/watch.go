package postgres

import "github.com/laurel/laurel"

var _ laurel.Watcher = (*Store)(nil)

// Watch calls changed after every change that a read can see, on any store serving the same
// database pair: with the board it touched, or nil when the change may show on any board (a
// profile, a hidden mark). The index carries the news between stores. It implements
// laurel.Watcher; changed must return at once.
func (e *Store) Watch(changed func(boards []string)) (stop func()) {
	return e.watchers.Watch(changed)
}

// changed hears from the index that a board changed ("": any board).
func (e *Store) changed(board string) {
	e.watchers.Notify(func() []string {
		if board == "" {
			return nil
		}
		return []string{board}
	})
}
