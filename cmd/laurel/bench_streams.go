package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
)

// runMemberStreams is `laurel bench -member-streams N`: laurel's ingest measured three times in
// one run, without member streams, with N open (one for each of the N most active members,
// the Zipf draw's first), and without again, so that the ratio of the server's CPU an event
// with them to the mean of the two without is what the streams cost the writers, the drift of
// a store settling after its preload taken out (docs/benchmarks.md, "Members' live streams").
func runMemberStreams(ctx context.Context, t *laurelTarget, c benchConfig, stdout io.Writer) error {
	if err := t.setup(ctx); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	if c.preload {
		if err := preload(ctx, t, c); err != nil {
			return fmt.Errorf("preload: %w", err)
		}
	}
	before, err := measureAgain(ctx, t, c)
	if err != nil {
		return fmt.Errorf("without streams: %w", err)
	}
	streams, err := openMemberStreams(ctx, t, c)
	if err != nil {
		return err
	}
	sent0 := streams.events.Load()
	with, err := measureAgain(ctx, t, c)
	sent := streams.events.Load() - sent0
	dropped := streams.dropped.Load()
	streams.close()
	if err != nil {
		return fmt.Errorf("with %d member streams: %w", c.memberStreams, err)
	}
	after, err := measureAgain(ctx, t, c)
	if err != nil {
		return fmt.Errorf("without streams again: %w", err)
	}
	before.name, with.name, after.name = "none", fmt.Sprintf("%d", c.memberStreams), "none again"

	fmt.Fprintf(stdout, "members %d, windows %s, batch %d, writers %d (%s), %s each, zipf %.2f\n\n",
		c.members, c.windows, c.batch, c.writers, pace(c), c.duration, c.zipf)
	fmt.Fprintf(stdout, "%-14s %12s %22s %18s %16s\n", "member streams", "events/s", "server CPU µs/event", "write p99 ms", "standings sent/s")
	for _, r := range []benchResult{before, with, after} {
		perSecond := 0.0
		if r.name == with.name {
			perSecond = float64(sent) / r.took.Seconds()
		}
		fmt.Fprintf(stdout, "%-14s %12.0f %22.2f %18s %16.0f\n", r.name, r.rate(), r.cpuPerEvent(r.serverCPU), ms(quantile(r.writes, .99)), perSecond)
	}
	cpu := (before.cpuPerEvent(before.serverCPU) + after.cpuPerEvent(after.serverCPU)) / 2
	rate := (before.rate() + after.rate()) / 2
	fmt.Fprintf(stdout, "with / without (the mean of the two runs without): server CPU an event %.3f, events/s %.3f\n",
		with.cpuPerEvent(with.serverCPU)/cpu, with.rate()/rate)
	if dropped > 0 {
		fmt.Fprintf(stdout, "(%d streams were dropped by the server during the run and not reopened)\n", dropped)
	}
	return nil
}

// measureAgain is measureServer with ids of the run's own: a run's ids again would all be
// duplicates.
func measureAgain(ctx context.Context, t *laurelTarget, c benchConfig) (benchResult, error) {
	t.runs++
	t.c.run = c.run + "." + strconv.Itoa(t.runs)
	return measureServer(ctx, t, c)
}

// memberStreams are the open streams, counting the standings they receive.
type memberStreams struct {
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	events  atomic.Int64
	dropped atomic.Int64
}

// openMemberStreams opens a stream for each of members 0…N-1 and returns once every one has
// had its first standings.
func openMemberStreams(ctx context.Context, t *laurelTarget, c benchConfig) (*memberStreams, error) {
	ctx, cancel := context.WithCancel(ctx)
	s := &memberStreams{cancel: cancel}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxConnsPerHost, tr.MaxIdleConnsPerHost = 0, c.memberStreams
	client := &http.Client{Transport: tr}
	bar := newProgress(c.stderr, "opening member streams", int64(c.memberStreams), false)
	ready := make(chan error, c.memberStreams)
	// A few connect at a time: ten thousand at once overflow the server's accept queue.
	connecting := make(chan struct{}, 64)
	for i := range c.memberStreams {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			var once sync.Once
			connecting <- struct{}{}
			done := func(err error) {
				once.Do(func() {
					<-connecting
					ready <- err
				})
			}
			req, err := t.newRequest(ctx, "GET", "/v1/boards/"+t.c.board+"/members/"+memberID(i)+"/stream", nil)
			if err == nil {
				err = s.follow(client, req, func() { done(nil) })
			}
			if err != nil && ctx.Err() == nil {
				done(fmt.Errorf("member stream %d: %w", i, err))
			}
		}()
	}
	for range c.memberStreams {
		select {
		case err := <-ready:
			if err != nil {
				s.close()
				return nil, err
			}
			bar.Add(1)
		case <-ctx.Done():
			s.close()
			return nil, ctx.Err()
		}
	}
	bar.Finish()
	return s, nil
}

// follow reads one stream, counting its standings, and calls started when the first came.
func (s *memberStreams) follow(client *http.Client, req *http.Request, started func()) error {
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := check(resp, req); err != nil {
		return err
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if bytes.HasPrefix(sc.Bytes(), []byte("event: standing")) {
			s.events.Add(1)
			started()
		}
	}
	if req.Context().Err() == nil {
		s.dropped.Add(1)
	}
	return nil
}

func (s *memberStreams) close() {
	s.cancel()
	s.wg.Wait()
}
