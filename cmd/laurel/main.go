// Command laurel is the leaderboard server and its tools. It is the only place that reads
// flags and the environment; each subcommand lives in its own file with its own FlagSet.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/term"

	// Boards name IANA zones; embedding the database makes the binary independent of the
	// host's zoneinfo.
	_ "time/tzdata"
)

// command is one subcommand: its name, a line of help, and what runs it.
type command struct {
	name  string
	short string
	run   func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"demo", "run the server on a temporary store with boards and players who keep scoring", runDemo},
		{"serve", "run the HTTP API on the embedded store, or on PostgreSQL and Redis", runServe},
		{"rebuild", "rebuild the scale-out index in Redis from PostgreSQL", runRebuild},
		{"export", "write everything a store holds as a dump (a backup, or a move to the other kind of store)", runExport},
		{"import", "load a dump into a new embedded store or into the scale-out store", withStdin(runImport)},
		{"bench", "drive a running laurel (and Redis, side by side) and print throughput and latency", runBench},
		{"version", "print the version of this build", runVersion},
	}
}

// withStdin gives a command that reads standard input the process's.
func withStdin(run func(ctx context.Context, args []string, stdin io.Reader, stderr io.Writer) error) func(context.Context, []string, io.Writer, io.Writer) error {
	return func(ctx context.Context, args []string, _, stderr io.Writer) error {
		return run(ctx, args, os.Stdin, stderr)
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run dispatches to a subcommand and returns the process exit code: 0 on success, 2 on a usage
// error, 1 on any other failure.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, args[1:], stdout, stderr)
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.As(err, new(usageError)):
			fmt.Fprintf(stderr, "laurel %s: %v\n", c.name, err)
			return 2
		default:
			fmt.Fprintf(stderr, "laurel %s: %v\n", c.name, err)
			return 1
		}
	}
	fmt.Fprintf(stderr, "laurel: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: laurel <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.short)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, `Run "laurel <command> -h" for the flags of a command.`)
}

// terminal reports whether w is a terminal, where a person reads, rather than a file or a
// pipe, where programs do.
func terminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// usageError marks a mistake in how a command was called (exit status 2).
type usageError struct{ error }

// newFlagSet returns a FlagSet for a subcommand that reports errors instead of exiting.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("laurel "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseFlags parses args and refuses positional arguments the command does not take.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	return nil
}
