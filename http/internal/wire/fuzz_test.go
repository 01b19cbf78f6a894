package wire

import (
	"testing"

	"github.com/laurel/laurel"
)

// FuzzDecodeEvents checks that decoding an event submit never panics, that it answers exactly
// as the reference decoder does (events_ref_test.go), and that whatever it accepts is valid: a
// board, a member, an id and a name that laurel accepts, and at least one and at most
// laurel.MaxBatch events.
func FuzzDecodeEvents(f *testing.F) {
	for _, seed := range []string{
		`{"member": "alice", "value": 5, "ts": "2026-11-22T10:00:00Z", "id": "solve-123", "name": "Alice"}`,
		`{"events": [{"member": "alice", "value": 5}, {"member": "bob", "value": 2, "id": "x-9"}]}`,
		`{"events": [{"board": "b", "member": "alice", "value": -9223372036854775808}]}`,
		`{"member": "alice", "value": 1.5}`,
		`{"member": "alice", "value": 1e3}`,
		`{"member": "a", "value": 9223372036854775808}`,
		`{"events": null}`, `{"events": [null]}`, `[]`, `null`, ``, `{"member": "a\u0000", "value": 1}`,
		`{"member": "a", "value": 1, "ts": null, "id": null, "name": null}`,
		`{"member": "a", "value": 1, "subscore": -3}`, `{"member": "a", "value": 1, "subscore": null}`, `{"member": "a", "value": 1, "subscore": 0.5}`,
	} {
		f.Add([]byte(seed), "b")
		f.Add([]byte(seed), "")
	}
	for _, seed := range decodeCorpus {
		if len(seed) <= 1000 { // the big ones only slow the fuzzer down
			f.Add([]byte(seed), "b")
			f.Add([]byte(seed), "")
		}
	}
	f.Fuzz(func(t *testing.T, body []byte, board string) {
		if laurel.ValidateBoardID(board) != nil {
			board = ""
		}
		if diff := diffDecode(body, board); diff != "" {
			t.Fatalf("DecodeEvents differs from the reference:\n%s", diff)
		}
		events, single, err := DecodeEvents(body, board)
		if err != nil {
			if laurel.ErrorCode(err) == laurel.EInternal {
				t.Fatalf("error without a code: %v", err)
			}
			if events != nil {
				t.Fatalf("events with an error")
			}
			return
		}
		if len(events) == 0 || len(events) > laurel.MaxBatch || single && len(events) != 1 {
			t.Fatalf("%d events (single %v)", len(events), single)
		}
		for _, ev := range events {
			if board != "" && ev.Board != board {
				t.Fatalf("board %q, want %q", ev.Board, board)
			}
			if err := laurel.ValidateBoardID(ev.Board); err != nil {
				t.Fatalf("board %q: %v", ev.Board, err)
			}
			if err := laurel.ValidateMember("member", ev.Member); err != nil {
				t.Fatalf("member %q: %v", ev.Member, err)
			}
			if err := laurel.ValidateEventID("id", ev.ID); err != nil {
				t.Fatalf("id %q: %v", ev.ID, err)
			}
			if ev.Name != nil {
				if err := laurel.ValidateName("name", *ev.Name); err != nil {
					t.Fatalf("name %q: %v", *ev.Name, err)
				}
			}
			if ev.HasTS {
				if _, err := laurel.ParseTime(laurel.FormatTime(ev.TS)); err != nil {
					t.Fatalf("ts %d: %v", ev.TS, err)
				}
			}
		}
	})
}
