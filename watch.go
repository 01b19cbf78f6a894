package laurel

import "sync"

// Watcher is implemented by a Service that can tell when boards change, so that live streams
// need not poll. Watch calls changed after every change is applied, with the boards it may
// have altered; nil means any board (a profile or a hidden flag changed). changed runs on the
// service's writer, so it must return at once. The returned function stops the calls.
type Watcher interface {
	Watch(changed func(boards []string)) (stop func())
}

// Watchers is the list of functions a Watcher calls: a store keeps one, hands Watch on to
// it, and calls Notify after each change. The zero value is an empty list.
type Watchers struct {
	mu   sync.Mutex
	m    map[int]func(boards []string)
	next int
}

// Watch adds changed to the list until stop is called.
func (w *Watchers) Watch(changed func(boards []string)) (stop func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = make(map[int]func([]string))
	}
	w.next++
	id := w.next
	w.m[id] = changed
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.m, id)
	}
}

// Notify calls every function of the list with the boards that boards returns (nil: any
// board), and calls boards only when the list is not empty.
func (w *Watchers) Notify(boards func() []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.m) == 0 {
		return
	}
	b := boards()
	for _, f := range w.m {
		f(b)
	}
}
