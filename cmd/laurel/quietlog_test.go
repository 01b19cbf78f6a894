package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/laurel/laurel/laureltest"
)

// TestQuietLog: of a flood of one error, the first few are logged, then one line says how
// many more there were; other messages and levels below warning pass untouched.
func TestQuietLog(t *testing.T) {
	var out laureltest.Buffer
	log := slog.New(newQuietHandler(slog.NewTextHandler(&out, nil), 200*time.Millisecond, 3))
	for i := range 1000 {
		log.Error("store failed", "i", i)
		log.Info("request", "i", i)
	}
	log.With("board", "b").Warn("slow commit")
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(out.String(), "more in the last"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no summary of the flood:\n%s", out.String())
		}
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var errs, infos, warns, summaries int
	for _, l := range lines {
		switch {
		case strings.Contains(l, "more in the last 200ms"):
			summaries++
			if !strings.Contains(l, "store failed (… 997 more") || !strings.Contains(l, "level=ERROR") || !strings.Contains(l, "i=999") {
				t.Errorf("summary %q", l)
			}
		case strings.Contains(l, "store failed"):
			errs++
		case strings.Contains(l, "msg=request"):
			infos++
		case strings.Contains(l, "slow commit") && strings.Contains(l, "board=b"):
			warns++
		}
	}
	if errs != 3 || summaries != 1 || infos != 1000 || warns != 1 {
		t.Fatalf("%d errors, %d summaries, %d infos, %d warnings; want 3, 1, 1000, 1", errs, summaries, infos, warns)
	}
	// After the window, the message is logged again.
	log.Error("store failed", "i", 1000)
	if n := strings.Count(out.String(), "i=1000"); n != 1 {
		t.Fatalf("the error after its window: logged %d times", n)
	}
	if got := thousands(9412); got != "9,412" {
		t.Errorf("thousands(9412) = %q", got)
	}
}

// The server's JSON log writes durations as people read them, not as nanoseconds.
func TestLogDurationsAreHuman(t *testing.T) {
	var out bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{ReplaceAttr: humanDurations}))
	log.Info("store recovered", "took", 1234567890*time.Nanosecond, "commit", 2345678*time.Nanosecond, "tiny", 420*time.Nanosecond, "boards", 3)
	for _, want := range []string{`"took":"1.235s"`, `"commit":"2.346ms"`, `"tiny":"420ns"`, `"boards":3`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("%s: want %s", out.String(), want)
		}
	}
}
