package embedded_test

import (
	"maps"
	"testing"

	"github.com/laurel/laurel/embedded"
)

// FuzzLogRecordPoints: a seal reads the history points of the log's records skipping their
// events; it must find exactly the points that decoding a record whole finds, and accept
// every record that decodes whole.
func FuzzLogRecordPoints(f *testing.F) {
	f.Add(embedded.LogRecord(1764000000000, nil, nil))
	f.Add(embedded.LogRecord(1764000000000, [][5]string{{"b", "ada", "", "5", "1764000000000"}}, map[uint64]string{7: "pt"}))
	f.Add(embedded.LogRecord(-1, [][5]string{{"board", "ménage", "id-1", "-3", "-9"}, {"b", "bob", "x", "9223372036854775807", "0"}},
		map[uint64]string{1: "", 2: "\x00\x01", 300: "a longer point, of some bytes"}))
	f.Fuzz(func(t *testing.T, b []byte) {
		whole, skipped, wholeErr, skipErr := embedded.LogRecordPoints(b)
		if wholeErr != nil {
			return // a record a seal could not have read from the log either
		}
		if skipErr != nil {
			t.Fatalf("decoded whole, but skipping its events: %v", skipErr)
		}
		if !maps.Equal(whole, skipped) {
			t.Fatalf("points decoded whole %v, skipping events %v", whole, skipped)
		}
	})
}
