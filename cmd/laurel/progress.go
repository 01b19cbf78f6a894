package main

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress reports how far a long command has got: a bar redrawn in place when w is a
// terminal, and otherwise (a log, a pipe) a plain line every progressEvery, so that logs get
// readable lines and no carriage returns.
type progress struct {
	bar *progressbar.ProgressBar // on a terminal

	w     io.Writer
	label string
	total int64 // -1: unknown
	bytes bool  // the count is of bytes

	mu    sync.Mutex
	n     int64
	shown time.Time
}

// progressEvery is how often a plain progress line is written.
var progressEvery = 5 * time.Second

// newProgress reports progress on w towards total (-1 when unknown), of bytes when bytes is
// set and of items otherwise.
func newProgress(w io.Writer, label string, total int64, bytes bool) *progress {
	p := &progress{w: w, label: label, total: total, bytes: bytes, shown: time.Now()}
	if terminal(w) {
		opts := []progressbar.Option{progressbar.OptionSetWriter(w), progressbar.OptionSetDescription(label),
			progressbar.OptionThrottle(200 * time.Millisecond), progressbar.OptionClearOnFinish()}
		if bytes {
			opts = append(opts, progressbar.OptionShowBytes(true))
		} else {
			opts = append(opts, progressbar.OptionShowCount())
		}
		p.bar = progressbar.NewOptions64(total, opts...)
	}
	return p
}

// Add counts n more.
func (p *progress) Add(n int) {
	if p.bar != nil {
		p.bar.Add(n)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n += int64(n)
	if time.Since(p.shown) >= progressEvery {
		p.shown = time.Now()
		fmt.Fprintf(p.w, "%s: %s\n", p.label, p.describe())
	}
}

// describe says how far it has got: "12.5 MiB", "45,000 of 300,000 (15%)".
func (p *progress) describe() string {
	count := func(n int64) string {
		if p.bytes {
			return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
		}
		return thousands(int(n))
	}
	if p.total <= 0 {
		return count(p.n)
	}
	return fmt.Sprintf("%s of %s (%d%%)", count(p.n), count(p.total), 100*p.n/p.total)
}

// Finish ends the report: the bar is cleared; callers print their own summary.
func (p *progress) Finish() {
	if p.bar != nil {
		p.bar.Finish()
	}
}

// Write counts b's bytes, so that progress can follow a stream: io.MultiWriter(w, p),
// io.TeeReader(r, p).
func (p *progress) Write(b []byte) (int, error) {
	p.Add(len(b))
	return len(b), nil
}
