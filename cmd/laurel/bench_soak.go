package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"
)

// soak is `laurel bench -soak`: the bench's writers and readers at a steady pace for hours,
// one line an interval of what the server then holds and how its reads fared, so that growth
// (memory, files, tables) and a tail that drifts are seen apart from the boards filling.
func soak(ctx context.Context, t *laurelTarget, c benchConfig, total, every time.Duration, stdout io.Writer) error {
	if err := t.setup(ctx); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	if c.preload {
		if err := preload(ctx, t, c); err != nil {
			return fmt.Errorf("preload: %w", err)
		}
	}
	fmt.Fprintf(stdout, "soak: members %d, windows %s, batch %d, writers %d at %.0f events/s in all, readers %d at %.0f a second each, %s in intervals of %s\n",
		c.members, c.windows, c.batch, c.writers, c.rate, c.readers, c.readRate, total, every)
	fmt.Fprintf(stdout, "%8s %9s %9s %9s %9s %9s %9s %7s %7s %7s %9s %7s\n",
		"elapsed", "events/s", "write p99", "read p50", "read p99", "RSS MB", "heap MB", "files", "tables", "log tbl", "memtbl MB", "ids MB")
	run := c.run
	start := time.Now()
	var samples []soakSample
	for n := 0; time.Duration(n)*every < total; n++ {
		c.run = run + "-" + strconv.Itoa(n) // ids differ from one interval to the next
		c.round = n
		c.duration = min(every, total-time.Duration(n)*every)
		t.c = c // its writers name their ids after c.run
		r, err := measure(ctx, t, c)
		if err != nil {
			return err
		}
		s, err := t.soakSample(ctx)
		if err != nil {
			return err
		}
		s.elapsed, s.rate = time.Since(start), r.rate()
		s.writeP99, s.readP50, s.readP99 = quantile(r.writes, .99), quantile(r.reads, .5), quantile(r.reads, .99)
		samples = append(samples, s)
		fmt.Fprintf(stdout, "%8s %9.0f %9s %9s %9s %9.1f %9.1f %7.0f %7.0f %7.0f %9.1f %7.1f\n",
			s.elapsed.Round(time.Second), s.rate, ms(s.writeP99), ms(s.readP50), ms(s.readP99),
			s.rss/1e6, s.heap/1e6, s.files, s.tables, s.logTables, s.memTables/1e6, s.idFilter/1e6)
	}
	printSoakSummary(stdout, samples)
	return nil
}

// soakSample is what one interval of a soak saw.
type soakSample struct {
	elapsed                    time.Duration
	rate                       float64
	writeP99, readP50, readP99 time.Duration
	rss, heap                  float64 // resident set; live heap right after a collection
	files                      float64 // open file descriptors
	tables, logTables          float64 // tables of the store's Pebble and of its log's
	memTables                  float64 // bytes of both's memtables
	idFilter                   float64 // bytes of the event id filter, part of heap
}

// soakSample reads what the server holds now: its live heap after a collection, and from
// /metrics its resident set, open files and the store's tables and memtables.
func (t *laurelTarget) soakSample(ctx context.Context) (soakSample, error) {
	heap, metrics, err := t.heapAndMetrics(ctx)
	if err != nil {
		return soakSample{}, err
	}
	var s soakSample
	for _, f := range []struct {
		v      *float64
		text   []byte
		prefix string
	}{
		{&s.heap, heap, "# HeapAlloc = "},
		{&s.rss, metrics, "process_resident_memory_bytes "},
		{&s.files, metrics, "process_open_fds "},
		{&s.tables, metrics, `laurel_store_tables{db="store"} `},
		{&s.logTables, metrics, `laurel_store_tables{db="log"} `},
		{&s.idFilter, metrics, "laurel_store_id_filter_bytes "},
	} {
		if *f.v, err = statLine(f.text, f.prefix); err != nil {
			return soakSample{}, err
		}
	}
	for _, db := range []string{"store", "log"} {
		m, err := statLine(metrics, `laurel_store_memtable_bytes{db="`+db+`"} `)
		if err != nil {
			return soakSample{}, err
		}
		s.memTables += m
	}
	return s, nil
}

// printSoakSummary prints the growth over the run's second half, once the boards have had
// its first half to fill, and the worst interval's read p99 against the median's. The heap's
// growth is told apart from the id filter's, which holds every event id ever stored and so
// grows by design while events with ids come in.
func printSoakSummary(w io.Writer, samples []soakSample) {
	if len(samples) < 2 {
		return
	}
	mid, last := samples[(len(samples)-1)/2], samples[len(samples)-1]
	growth := func(a, b float64) string {
		if a == 0 {
			return "-"
		}
		return fmt.Sprintf("%+.1f%%", (b-a)/a*100)
	}
	fmt.Fprintf(w, "\nover the second half (%s → %s): RSS %s, heap %s, open files %.0f → %.0f, tables %.0f → %.0f, log tables %.0f → %.0f\n",
		mid.elapsed.Round(time.Second), last.elapsed.Round(time.Second), growth(mid.rss, last.rss), growth(mid.heap, last.heap),
		mid.files, last.files, mid.tables, last.tables, mid.logTables, last.logTables)
	fmt.Fprintf(w, "the heap less the id filter %s (%.1f → %.1f MB); the id filter %.1f → %.1f MB\n",
		growth(mid.heap-mid.idFilter, last.heap-last.idFilter), (mid.heap-mid.idFilter)/1e6, (last.heap-last.idFilter)/1e6, mid.idFilter/1e6, last.idFilter/1e6)
	p99s := make([]time.Duration, len(samples))
	for i, s := range samples {
		p99s[i] = s.readP99
	}
	median, worst := quantile(p99s, .5), slices.Max(p99s)
	fmt.Fprintf(w, "read p99 of the intervals: median %s ms, worst %s ms (%.1f× the median)\n",
		ms(median), ms(worst), float64(worst)/float64(max(median, 1)))
}
