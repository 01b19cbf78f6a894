package main

import (
	"slices"
	"sync"
	"time"
)

// result is one (store, variant, concurrency) measurement, possibly made of
// several runs added together.
type result struct {
	Store, Variant string
	Conc           int
	Writes         int64
	Secs           float64
	Groups         int64 // durable commits (fsync groups); 0 if the store does not tell
	Bytes          int64 // bytes written (see procIO), flushes and compactions included
	PerSec         float64
	P50, P99       time.Duration
	Ref            *result // the reference, run interleaved with this
	lats           []time.Duration
}

func (r *result) add(o result) {
	r.Conc = o.Conc
	r.Writes += o.Writes
	r.Secs += o.Secs
	r.Groups += o.Groups
	r.Bytes += o.Bytes
	r.lats = append(r.lats, o.lats...)
}

func (r *result) finish() {
	slices.Sort(r.lats)
	r.PerSec = float64(r.Writes) / r.Secs
	r.P50, r.P99 = r.lats[len(r.lats)/2], r.lats[len(r.lats)*99/100]
}

// closedLoop runs conc clients for d, each submitting one write and waiting
// for it to be durable before the next: the shape of HTTP clients waiting for
// their acknowledgement.
func closedLoop(conc int, d time.Duration, members int, do func(*write) error) result {
	io0 := procIO()
	var (
		mu   sync.Mutex
		lats []time.Duration
		wg   sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(d)
	for c := range conc {
		wg.Go(func() {
			g := newGen(uint64(c)+uint64(start.UnixNano()), members)
			var mine []time.Duration
			for time.Now().Before(deadline) {
				w := g.next()
				t := time.Now()
				if err := do(w); err != nil {
					panic(err)
				}
				mine = append(mine, time.Since(t))
			}
			mu.Lock()
			lats = append(lats, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	return result{Conc: conc, Writes: int64(len(lats)), Secs: time.Since(start).Seconds(),
		Bytes: procIO() - io0, lats: lats}
}

// groupCommitter is laurel's writer: one goroutine takes every pending write,
// commits them together (one fsync), then acknowledges each. commit returns a
// wait function: a store that can make a group visible before it is synced
// (Pebble) lets the writer build the next group while an acker waits; for the
// others, wait just returns commit's error.
type groupCommitter struct {
	in     chan pending
	groups int64
	done   chan struct{}
}

type pending struct {
	w    *write
	done chan error
}

type group struct {
	ps   []pending
	wait func() error
}

const maxGroup = 1024

func newGroupCommitter(commit func([]*write) (wait func() error)) *groupCommitter {
	g := &groupCommitter{in: make(chan pending, maxGroup), done: make(chan struct{})}
	acks := make(chan group, 4)
	go func() { // writer
		defer close(acks)
		for p := range g.in {
			ps := []pending{p}
		drain:
			for len(ps) < maxGroup {
				select {
				case p, ok := <-g.in:
					if !ok {
						break drain
					}
					ps = append(ps, p)
				default:
					break drain
				}
			}
			ws := make([]*write, len(ps))
			for i, p := range ps {
				ws[i] = p.w
			}
			acks <- group{ps, commit(ws)}
			g.groups++
		}
	}()
	go func() { // acker: in commit order
		for gr := range acks {
			err := gr.wait()
			for _, p := range gr.ps {
				p.done <- err
			}
		}
		close(g.done)
	}()
	return g
}

func (g *groupCommitter) submit(w *write) error {
	p := pending{w, make(chan error, 1)}
	g.in <- p
	return <-p.done
}

// close stops the writer and returns how many groups it committed.
func (g *groupCommitter) close() int64 {
	close(g.in)
	<-g.done
	return g.groups
}

func done(err error) func() error { return func() error { return err } }

// runGroup measures a group-committed variant at one concurrency.
func runGroup(conc int, d time.Duration, members int, commit func([]*write) func() error) result {
	g := newGroupCommitter(commit)
	r := closedLoop(conc, d, members, g.submit)
	r.Groups = g.close()
	return r
}
