package postgres

import "github.com/laurel/laurel"

var (
	_ laurel.Watcher       = (*Store)(nil)
	_ laurel.MemberWatcher = (*Store)(nil)
)

// Watch calls changed after every change that a read can see, on any store serving the same
// database pair: with the board it touched, or nil when the change may show on any board (a
// profile, a hidden mark). The index carries the news between stores. It implements
// laurel.Watcher; changed must return at once.
func (s *Store) Watch(changed func(boards []string)) (stop func()) {
	return s.watchers.Watch(changed)
}

// WatchMembers is Watch with the members whose entries each change moved, as the store that
// made it told the index. It implements laurel.MemberWatcher.
func (s *Store) WatchMembers(changed func([]laurel.Changed)) (stop func()) {
	return s.watchers.WatchMembers(changed)
}

// changed hears from the index what changed.
func (s *Store) changed(c laurel.Changed) {
	s.watchers.Notify(func(bool) []laurel.Changed { return []laurel.Changed{c} })
}
