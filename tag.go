package laurel

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// MaxTag is the most bytes an event's tag may take, as compact JSON (docs/api.md, "Tags").
const MaxTag = 256

// NormalizeTag checks an event's tag and returns it as compact JSON: any JSON value of at most
// MaxTag bytes once compacted. An empty tag or null is no tag (nil). field names the tag in
// errors.
func NormalizeTag(field string, tag json.RawMessage) (json.RawMessage, error) {
	tag = bytes.TrimSpace(tag)
	if len(tag) == 0 || string(tag) == "null" {
		return nil, nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, tag); err != nil {
		return nil, FieldErrorf(EInvalid, field, "must be a JSON value")
	}
	if !utf8.Valid(buf.Bytes()) {
		// JSON is UTF-8 (RFC 8259): a tag is answered as it was stored.
		return nil, FieldErrorf(EInvalid, field, "must be valid UTF-8")
	}
	if buf.Len() > MaxTag {
		return nil, FieldErrorf(EInvalid, field, "must be at most %d bytes as compact JSON", MaxTag)
	}
	if buf.Len() == len(tag) {
		return tag, nil
	}
	return buf.Bytes(), nil
}

// TagOf returns the tag of the event that made an entry's score (k: its score and subscore,
// reached at k.At) in a board of mode m, among the member's events that count in the entry's
// span (docs/design.md, "Tags"): in best, the earliest event with that score and subscore (the
// first to arrive of those at the same instant); in last and sum, the latest counted event
// (the last to arrive of those at the same instant). Every such event has its time at the
// entry's reached_at, so events of other spans never qualify. Nil when that event has no tag.
func TagOf(m Mode, k Key, events []Counted) json.RawMessage {
	var tag json.RawMessage
	found := false
	for _, ev := range events {
		if ev.TS != k.At || m == Best && (ev.Value != k.Score || ev.Sub != k.Sub) {
			continue
		}
		if m == Best && found {
			continue // arrival order: the first one made the score
		}
		tag, found = ev.Tag, true
	}
	return tag
}
