// Command storebench measures the write path and the restart scan laurel's
// embedded store will have, on Pebble v2 and on bbolt, against a raw-file
// reference measured in the same run. See docs/decisions.md.
//
//	CGO_ENABLED=0 go run . [-dur 3s] [-records 10000000] [-dir /tmp] [-stores pebble,bbolt]
//
// CGO_ENABLED=0 builds it as laurel ships, pure Go: with cgo, Pebble would
// keep its memtables and block cache in C memory, out of the Go heap. Linux
// only: it reads /proc/self and uses fdatasync and fadvise.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

type options struct {
	dir     string
	dur     time.Duration
	records int
	members int
	concs   []int
}

func main() {
	var opt options
	var concs, child, names string
	flag.StringVar(&opt.dir, "dir", os.TempDir(), "where the temporary stores go (pick the disk to measure)")
	flag.DurationVar(&opt.dur, "dur", 3*time.Second, "how long each write measurement runs (its reference runs half as long)")
	flag.IntVar(&opt.records, "records", 10_000_000, "records loaded for the recovery scan")
	flag.IntVar(&opt.members, "members", 1_000_000, "members the writes are spread over (Zipf)")
	flag.StringVar(&concs, "conc", "1,16,64", "concurrent writers")
	flag.StringVar(&names, "stores", "pebble,bbolt", "stores to measure: pebble, bbolt, bbolt-nofreelistsync")
	flag.StringVar(&child, "child", "", "internal: run one store in this process and print JSON")
	flag.Parse()
	for c := range strings.SplitSeq(concs, ",") {
		n, err := strconv.Atoi(c)
		if err != nil || n < 1 {
			fail(fmt.Errorf("bad -conc %q", concs))
		}
		opt.concs = append(opt.concs, n)
	}
	if child != "" {
		rep, err := runChild(child, opt)
		if err != nil {
			fail(err)
		}
		json.NewEncoder(os.Stdout).Encode(rep)
		return
	}

	// Each store runs in its own process so memory figures are its own. The
	// recovery reference runs first and last: its drift tells how noisy the
	// machine was.
	fmt.Printf("storebench: %s, %d CPUs, dir %s, %v per point, %d records, %d members\n\n",
		runtime.Version(), runtime.NumCPU(), opt.dir, opt.dur, opt.records, opt.members)
	reps := map[string]*storeReport{}
	stores := slices.Concat([]string{"reference"}, strings.Split(names, ","), []string{"reference2"})
	for _, name := range stores {
		t := time.Now()
		rep, err := spawn(name)
		if err != nil {
			fail(fmt.Errorf("%s: %w", name, err))
		}
		fmt.Fprintf(os.Stderr, "storebench: %s took %v\n", name, time.Since(t).Round(time.Second))
		reps[name] = rep
	}
	printReport(os.Stdout, stores, reps)
}

func runChild(name string, opt options) (*storeReport, error) {
	switch name {
	case "reference", "reference2":
		dir, err := os.MkdirTemp(opt.dir, "storebench-"+name+"-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		rec, err := rawRecovery(dir, opt.records)
		return &storeReport{Recovery: rec, Mem: readMem()}, err
	case "pebble":
		return runStore(name, opt.dir, openPebble, opt)
	case "bbolt":
		return runStore(name, opt.dir, openBolt(false), opt)
	case "bbolt-nofreelistsync":
		return runStore(name, opt.dir, openBolt(true), opt)
	}
	return nil, fmt.Errorf("unknown store %q", name)
}

func spawn(name string) (*storeReport, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, append([]string{"-child", name}, os.Args[1:]...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, err
	}
	var rep storeReport
	return &rep, json.Unmarshal(out.Bytes(), &rep)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "storebench:", err)
	os.Exit(1)
}
