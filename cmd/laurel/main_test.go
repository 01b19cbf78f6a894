package main

import (
	"bytes"
	"context"
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
		{[]string{"serve", "-log-level", "loud"}, 2, "", "-log-level"},
		{nil, 2, "", "usage: laurel <command>"},
		{[]string{"help"}, 0, "", "version"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), tc.args, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stdout.String(), tc.stdout) || !strings.Contains(stderr.String(), tc.stderrIn) {
			t.Errorf("laurel %v: exit %d, stdout %q, stderr %q; want exit %d, stdout with %q, stderr with %q",
				tc.args, code, stdout.String(), stderr.String(), tc.code, tc.stdout, tc.stderrIn)
		}
	}
}
