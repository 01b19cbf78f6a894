package main

import (
	"bytes"
	"strings"
	"testing"
)

// Away from a terminal, progress is plain lines that a log keeps readable: no carriage
// returns or escape codes, counts with separators, bytes in MiB, and a share when the total
// is known.
func TestProgressOffATerminal(t *testing.T) {
	every := progressEvery
	progressEvery = 0
	t.Cleanup(func() { progressEvery = every })

	var out bytes.Buffer
	p := newProgress(&out, "loading members", 300000, false)
	p.Add(1000)
	p.Add(44000)
	p.Finish()
	want := "loading members: 1,000 of 300,000 (0%)\nloading members: 45,000 of 300,000 (15%)\n"
	if out.String() != want {
		t.Fatalf("got %q, want %q", out.String(), want)
	}

	out.Reset()
	p = newProgress(&out, "exporting", -1, true)
	p.Add(131923968)
	p.Finish()
	if got := out.String(); got != "exporting: 125.8 MiB\n" {
		t.Fatalf("got %q", got)
	}
	if strings.ContainsAny(out.String(), "\r\x1b") {
		t.Fatalf("control characters in %q", out.String())
	}
}
