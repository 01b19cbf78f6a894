package embedded

import (
	"slices"
	"strings"

	"github.com/laurel/laurel"
)

var (
	_ laurel.Watcher       = (*Store)(nil)
	_ laurel.MemberWatcher = (*Store)(nil)
)

// Watch calls changed after every commit that changed what a read can see, with the ids of the
// boards it touched, or nil when the change may show on any board (a profile, a hidden mark,
// a deleted board). It implements laurel.Watcher. changed runs on the writer: it must return
// at once, or every write waits.
func (s *Store) Watch(changed func(boards []string)) (stop func()) {
	return s.watchers.Watch(changed)
}

// WatchMembers is Watch with the members whose entries each board's change moved. It
// implements laurel.MemberWatcher.
func (s *Store) WatchMembers(changed func([]laurel.Changed)) (stop func()) {
	return s.watchers.WatchMembers(changed)
}

// notify tells the watchers what the committed tx changed.
func (s *Store) notify(tx *txn) {
	if len(tx.touched) == 0 && !tx.global {
		return
	}
	s.watchers.Notify(func(members bool) []laurel.Changed {
		out := make([]laurel.Changed, 0, len(tx.touched)+1)
		for b := range tx.touched {
			out = append(out, laurel.Changed{Board: b.cfg.ID})
		}
		slices.SortFunc(out, func(a, b laurel.Changed) int { return strings.Compare(a.Board, b.Board) })
		if members {
			nameMembers(tx, out)
		}
		if tx.global {
			all := laurel.Changed{}
			if !tx.moved {
				all.Members = []string{} // a profile: no entry moved
			}
			out = append(out, all)
		}
		return out
	})
}

// nameMembers lists in each board's change the members whose entries tx set; a board whose
// change also ran an ordered step (a period opened or closed, a window slid, a board changed)
// may have moved anyone, and lists none.
func nameMembers(tx *txn, out []laurel.Changed) {
	find := func(id string) int {
		i, _ := slices.BinarySearchFunc(out, id, func(c laurel.Changed, id string) int { return strings.Compare(c.Board, id) })
		return i
	}
	anyone := make([]bool, len(out))
	seen := make([]map[string]bool, len(out))
	for _, c := range tx.after {
		switch {
		case c.f != nil && c.kind == changeOrdered:
			for i := range out {
				anyone[i] = true // an ordered step names no board: be safe
			}
		case c.f == nil && c.set.to != toRecent && c.set.b != nil:
			i := find(c.set.b.cfg.ID)
			if i == len(out) || anyone[i] {
				continue
			}
			if seen[i] == nil {
				seen[i] = make(map[string]bool)
			}
			if !seen[i][c.set.member] {
				seen[i][c.set.member] = true
				out[i].Members = append(out[i].Members, c.set.member)
			}
		}
	}
	for i := range out {
		switch {
		case anyone[i]:
			out[i].Members = nil
		case out[i].Members == nil:
			out[i].Members = []string{} // the change moved no entry
		}
	}
}
