package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"time"
)

// printReport prints Markdown tables, ready for docs/decisions.md. Write
// ratios are to the reference runs interleaved with each point; recovery
// ratios to the mean of the two recovery references.
func printReport(w io.Writer, stores []string, reps map[string]*storeReport) {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/1e6) }
	fmt.Fprintln(w, "Durable writes (1 event + 4 aggregate read-modify-writes each); each point alternates with its reference:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| store | variant | writers | writes/s | p50 ms | p99 ms | reference writes/s | reference p50 / p99 ms | × reference | writes/fsync group | bytes written/write |")
	fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, name := range stores[1 : len(stores)-1] {
		for _, r := range reps[name].Writes {
			group := "—"
			if r.Groups > 0 {
				group = fmt.Sprintf("%.1f", float64(r.Writes)/float64(r.Groups))
			}
			fmt.Fprintf(w, "| %s | %s | %d | %.0f | %s | %s | %.0f | %s / %s | %.2f | %s | %.0f |\n", name, r.Variant, r.Conc,
				r.PerSec, ms(r.P50), ms(r.P99), r.Ref.PerSec, ms(r.Ref.P50), ms(r.Ref.P99), r.PerSec/r.Ref.PerSec, group, float64(r.Bytes)/float64(r.Writes))
		}
	}
	fmt.Fprintln(w)
	logical := len(newGen(0, 2).next().bytes())
	for _, name := range stores[1 : len(stores)-1] {
		r := reps[name]
		fmt.Fprintf(w, "- %s: %.0f bytes written per write over all its write runs, compactions included: %.0f× the %d logical bytes\n",
			name, r.BytesPerWrite, r.BytesPerWrite/float64(logical), logical)
		for _, v := range slices.Sorted(maps.Keys(r.Recovery.LostUpdates)) {
			fmt.Fprintf(w, "- %s / %s: %d lost updates\n", name, v, r.Recovery.LostUpdates[v])
		}
	}

	ref1, ref2 := reps["reference"], reps["reference2"]
	refCold := (ref1.Recovery.ScanSec + ref2.Recovery.ScanSec) / 2
	refWarm := (ref1.Recovery.WarmScanSec + ref2.Recovery.WarmScanSec) / 2
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Recovery: open and full ordered scan (reference: read the same records as one flat file):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| store | records | load s | data MiB | allocated MiB | data bytes/record | load bytes written/record | cold open s | cold scan s | cold open+scan × reference | warm scan s | warm × reference |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, name := range stores {
		r := reps[name].Recovery
		fmt.Fprintf(w, "| %s | %d | %.1f | %.0f | %.0f | %.1f | %.1f | %.2f | %.2f | %.1f | %.2f | %.1f |\n", name, r.Records,
			r.LoadSec, float64(r.DataBytes)/(1<<20), float64(r.DiskBytes)/(1<<20), float64(r.DataBytes)/float64(r.Records),
			float64(r.LoadWriteBytes)/float64(r.Records), r.OpenSec, r.ScanSec,
			(r.OpenSec+r.ScanSec)/refCold, r.WarmScanSec, r.WarmScanSec/refWarm)
	}

	fmt.Fprintln(w)
	fmt.Fprintln(w, "Memory at the end of each process (MiB):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| store | peak RSS | RSS anon | RSS file (mmap) | Go heap in use |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|")
	mib := func(n int64) float64 { return float64(n) / (1 << 20) }
	for _, name := range stores[:len(stores)-1] {
		m := reps[name].Mem
		fmt.Fprintf(w, "| %s | %.0f | %.0f | %.0f | %.0f |\n", name, mib(m.PeakRSS), mib(m.RSSAnon), mib(m.RSSFile), mib(m.GoHeap))
	}
}
