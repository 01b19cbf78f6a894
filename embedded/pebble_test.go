package embedded_test

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/embedded"
	"github.com/laurel/laurel/laureltest"
)

// TestPebbleEventsAtDebugLevel: at debug level the store logs what Pebble does with its files
// (here a seal's ingestion, and the log's tables), the log's own marked as such; at info level
// none of it.
func TestPebbleEventsAtDebugLevel(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo} {
		t.Run(level.String(), func(t *testing.T) {
			var out laureltest.Buffer
			logger := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: level}))
			e, err := embedded.Open(t.TempDir(), embedded.Options{Logger: logger, SealEvents: 10})
			if err != nil {
				t.Fatal(err)
			}
			putBoard(t, e, "b", laurel.BoardSpec{Windows: []string{"all"}})
			for i := range 30 {
				submit(t, e, laurel.Event{Board: "b", Member: fmt.Sprint("m", i%7), Value: 1, ID: fmt.Sprint("e", i)})
			}
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			logged := out.String()
			ingested := strings.Contains(logged, "ingested L")
			if ingested != (level == slog.LevelDebug) {
				t.Errorf("at %s, a seal's ingestion logged: %v\n%s", level, ingested, logged)
			}
			if level == slog.LevelDebug && !strings.Contains(logged, "db=log") {
				t.Errorf("at debug, nothing of the log's Pebble marked db=log:\n%s", logged)
			}
		})
	}
}
