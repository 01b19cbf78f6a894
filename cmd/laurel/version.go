package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/laurel/laurel"
)

func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("version", stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	rev := ""
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				rev = " " + s.Value[:12]
			}
		}
	}
	_, err := fmt.Fprintf(stdout, "laurel %s%s (%s, %s/%s)\n", laurel.Version, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return err
}
