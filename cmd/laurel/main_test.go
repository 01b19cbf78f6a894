package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/laurel/laurel"
)

func TestRun(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		code     int
		stdout   string
		stderrIn string
	}{
		{[]string{"version"}, 0, "laurel " + laurel.Version, ""},
		{[]string{"version", "extra"}, 2, "", `unexpected argument "extra"`},
		{[]string{"version", "-nope"}, 2, "", "flag provided but not defined"},
		{[]string{"frobnicate"}, 2, "", `unknown command "frobnicate"`},
		{[]string{"serve", "-memtable", "0"}, 2, "", "-cache and -memtable must be at least 1 (MiB)"},
		{[]string{"serve", "-checkpoint-lag", "0"}, 2, "", "-checkpoint-lag must be at least 1"},
		{[]string{"serve", "-seal-events", "0"}, 2, "", "-seal-events must be at least 1"},
		{[]string{"serve", "-log-level", "loud"}, 2, "", `-log-level: "loud": want debug, info, warn or error`},
		{[]string{"bench", "-duration", "-1s", "-url", "http://127.0.0.1:1"}, 2, "", "-duration > 0"},
		{[]string{"bench", "-rate", "-3", "-url", "http://127.0.0.1:1"}, 2, "", "-rate ≥ 0"},
		{[]string{"bench", "-zipf", "1", "-url", "http://127.0.0.1:1"}, 2, "", "-zipf > 1"},
		{[]string{"demo", "-addr", "localhost"}, 2, "", `-addr: "localhost" is not host:port`},
		{[]string{"demo", "-rate", "0"}, 2, "", "-rate must be above 0"},
		{[]string{"import", "-data", "x", "extra"}, 2, "", `unexpected argument "extra"`},
		{nil, 2, "", "usage: laurel <command>"},
		{[]string{"help"}, 0, "", "version"},
		{[]string{"serve", "-h"}, 0, "", "LAUREL_PUBLIC_READ"}, // every variable it reads
		{[]string{"serve", "-h"}, 0, "", "LAUREL_WRITE_KEY"},
		{[]string{"demo", "-h"}, 0, "", "0: a new one, printed at start"}, // not a random default
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), tc.args, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stdout.String(), tc.stdout) || !strings.Contains(stderr.String(), tc.stderrIn) {
			t.Errorf("laurel %v: exit %d, stdout %q, stderr %q; want exit %d, stdout with %q, stderr with %q",
				tc.args, code, stdout.String(), stderr.String(), tc.code, tc.stdout, tc.stderrIn)
		}
	}
}

// Help shows only what a command has: rebuild works on the scale-out store alone, and has no
// -data to mention.
func TestRebuildHelpNamesNoDataFlag(t *testing.T) {
	var stdout, stderr bytes.Buffer
	run(context.Background(), []string{"rebuild", "-h"}, &stdout, &stderr)
	if !strings.Contains(stderr.String(), "-postgres") || strings.Contains(stderr.String(), "-data") {
		t.Fatalf("rebuild -h: %s", stderr.String())
	}
}

// serve -h is the reference an operator (and the Debian package's default file) points to: it
// names every flag and every LAUREL_* variable laurel reads, and the README's and
// docs/operations.md's tables of serve's settings hold every flag it lists.
func TestServeHelpListsEveryFlagAndVariable(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"serve", "-h"}, &stdout, &stderr); code != 0 {
		t.Fatalf("serve -h: exit %d", code)
	}
	help := stderr.String()

	sources, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	variable := regexp.MustCompile(`"(LAUREL_[A-Z_]+)"`)
	read := map[string]bool{}
	for _, name := range sources {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range variable.FindAllSubmatch(src, -1) {
			read[string(m[1])] = true
		}
	}
	if len(read) < 7 {
		t.Fatalf("found only %v read in the sources", read)
	}
	for v := range read {
		if !strings.Contains(help, v) {
			t.Errorf("serve -h does not name %s", v)
		}
	}

	flags := regexp.MustCompile(`(?m)^  (-[a-z-]+)`).FindAllStringSubmatch(help, -1)
	if len(flags) < 20 {
		t.Fatalf("serve -h lists %d flags:\n%s", len(flags), help)
	}
	for _, doc := range []string{"../../README.md", "../../docs/operations.md"} {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range flags {
			if !strings.Contains(string(text), "`"+f[1]+"`") {
				t.Errorf("%s does not document serve's %s", doc, f[1])
			}
		}
	}
}
