package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// quietHandler keeps a failing dependency from flooding the log: of the warnings and errors
// with the same message, it passes the first burst in each window and counts the rest, then
// says how many there were once the window ends ("… 9,412 more in the last 10s").
type quietHandler struct {
	next slog.Handler
	*floods
}

type floods struct {
	window time.Duration
	burst  int
	mu     sync.Mutex
	seen   map[string]*flood
}

// flood is one message's window.
type flood struct {
	n       int         // records seen in the window
	dropped int         // of them, not passed on
	last    slog.Record // the latest dropped, for its level and attributes
	next    slog.Handler
}

func newQuietHandler(next slog.Handler, window time.Duration, burst int) *quietHandler {
	return &quietHandler{next: next, floods: &floods{window: window, burst: burst, seen: make(map[string]*flood)}}
}

func (h *quietHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *quietHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		return h.next.Handle(ctx, r)
	}
	key := r.Level.String() + "\x00" + r.Message
	h.mu.Lock()
	f := h.seen[key]
	if f == nil {
		f = &flood{}
		h.seen[key] = f
		time.AfterFunc(h.window, func() { h.end(key) })
	}
	f.n++
	if f.n > h.burst {
		f.dropped++
		f.last, f.next = r.Clone(), h.next
		h.mu.Unlock()
		return nil
	}
	h.mu.Unlock()
	return h.next.Handle(ctx, r)
}

// end closes a message's window, saying how many of its records were left out.
func (h *quietHandler) end(key string) {
	h.mu.Lock()
	f := h.seen[key]
	delete(h.seen, key)
	h.mu.Unlock()
	if f == nil || f.dropped == 0 {
		return
	}
	r := slog.NewRecord(time.Now(), f.last.Level, fmt.Sprintf("%s (… %s more in the last %s)", f.last.Message, thousands(f.dropped), h.window), 0)
	f.last.Attrs(func(a slog.Attr) bool { r.AddAttrs(a); return true })
	f.next.Handle(context.Background(), r)
}

func (h *quietHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &quietHandler{next: h.next.WithAttrs(as), floods: h.floods}
}

func (h *quietHandler) WithGroup(name string) slog.Handler {
	return &quietHandler{next: h.next.WithGroup(name), floods: h.floods}
}

// thousands writes n with thousands separators: 9412 → "9,412".
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// humanDurations writes durations in logs as people read them ("took":"1.235s"), where JSON
// would write nanoseconds; to the millisecond from a second up, to the microsecond below.
func humanDurations(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() != slog.KindDuration {
		return a
	}
	d := a.Value.Duration()
	switch {
	case d >= time.Second:
		d = d.Round(time.Millisecond)
	case d >= time.Millisecond:
		d = d.Round(time.Microsecond)
	}
	return slog.String(a.Key, d.String())
}
