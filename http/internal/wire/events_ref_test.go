package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/laurel/laurel"
)

// refDecodeEvents is the decoder of event submits that DecodeEvents replaced, kept as the
// reference DecodeEvents must agree with (decode_test.go, FuzzDecodeEvents). It reads each
// object into a map of json.RawMessage, then each field, in the order of the sorted keys.
func refDecodeEvents(body []byte, board string) (events []laurel.Event, single bool, err error) {
	top, err := refDecodeObject("", body)
	if err != nil {
		return nil, false, err
	}
	raw, batch := top["events"]
	if !batch {
		ev, err := refDecodeEvent("", top, board)
		if err != nil {
			return nil, true, err
		}
		return []laurel.Event{ev}, true, nil
	}
	for _, k := range refSortedKeys(top) {
		if k != "events" {
			return nil, false, laurel.FieldErrorf(laurel.EInvalid, k, "unknown field: a batch holds only \"events\"")
		}
	}
	if len(raw) == 0 || raw[0] != '[' {
		return nil, false, laurel.FieldErrorf(laurel.EInvalid, "events", "must be an array of events")
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, false, laurel.FieldErrorf(laurel.EInvalid, "events", "must be an array of events")
	}
	if len(items) == 0 {
		return nil, false, laurel.FieldErrorf(laurel.EInvalid, "events", "must hold at least one event")
	}
	if len(items) > laurel.MaxBatch {
		return nil, false, laurel.FieldErrorf(laurel.ETooLarge, "events", "must hold at most %d events", laurel.MaxBatch)
	}
	events = make([]laurel.Event, len(items))
	for i, item := range items {
		prefix := fmt.Sprintf("events[%d]", i)
		obj, err := refDecodeObject(prefix, item)
		if err != nil {
			return nil, false, err
		}
		if events[i], err = refDecodeEvent(prefix+".", obj, board); err != nil {
			return nil, false, err
		}
	}
	return events, false, nil
}

// decodeObject reads a JSON object into its members.
func refDecodeObject(field string, raw []byte) (map[string]json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, laurel.Errorf(laurel.EInvalid, "the request body is empty: want a JSON object")
	}
	if raw[0] != '{' {
		if field == "" {
			return nil, laurel.Errorf(laurel.EInvalid, "malformed request: want a JSON object")
		}
		return nil, laurel.FieldErrorf(laurel.EInvalid, field, "must be an object")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		var syntaxErr *json.SyntaxError
		if errors.As(err, &syntaxErr) {
			return nil, laurel.Errorf(laurel.EInvalid, "malformed JSON: %s", syntaxErr.Error())
		}
		return nil, laurel.Errorf(laurel.EInvalid, "malformed JSON")
	}
	return obj, nil
}

func refSortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// decodeEvent reads one event's fields; f prefixes the names of the fields in errors.
func refDecodeEvent(f string, obj map[string]json.RawMessage, board string) (laurel.Event, error) {
	ev := laurel.Event{Board: board}
	hasMember, hasValue := false, false
	for _, k := range refSortedKeys(obj) {
		raw := obj[k]
		field := f + k
		switch k {
		case "board":
			if board != "" {
				return ev, laurel.FieldErrorf(laurel.EInvalid, field, "unknown field: the board is in the path")
			}
			s, err := refDecodeString(field, raw)
			if err != nil {
				return ev, err
			}
			if err := laurel.ValidateBoardID(s); err != nil {
				return ev, laurel.FieldErrorf(laurel.EInvalid, field, "%s", laurel.ErrorMessage(err))
			}
			ev.Board = s
		case "member":
			s, err := refDecodeString(field, raw)
			if err != nil {
				return ev, err
			}
			if err := laurel.ValidateMember(field, s); err != nil {
				return ev, err
			}
			ev.Member, hasMember = s, true
		case "value":
			v, err := refDecodeInt(field, raw)
			if err != nil {
				return ev, err
			}
			ev.Value, hasValue = v, true
		case "ts":
			if refIsNull(raw) {
				continue
			}
			s, err := refDecodeString(field, raw)
			if err != nil {
				return ev, err
			}
			ts, err := laurel.ParseTime(s)
			if err != nil {
				return ev, laurel.FieldErrorf(laurel.EInvalid, field, "%s", laurel.ErrorMessage(err))
			}
			ev.TS, ev.HasTS = ts, true
		case "id":
			if refIsNull(raw) {
				continue
			}
			s, err := refDecodeString(field, raw)
			if err != nil {
				return ev, err
			}
			if err := laurel.ValidateGivenEventID(field, s); err != nil {
				return ev, err
			}
			ev.ID = s
		case "name":
			if refIsNull(raw) {
				continue
			}
			s, err := refDecodeString(field, raw)
			if err != nil {
				return ev, err
			}
			if err := laurel.ValidateName(field, s); err != nil {
				return ev, err
			}
			ev.Name = &s
		case "subscore":
			if refIsNull(raw) {
				continue
			}
			v, err := refDecodeInt(field, raw)
			if err != nil {
				return ev, err
			}
			ev.Sub, ev.HasSub = v, true
		case "tag":
			tag, err := laurel.NormalizeTag(field, raw)
			if err != nil {
				return ev, err
			}
			ev.Tag = tag
		default:
			return ev, laurel.FieldErrorf(laurel.EInvalid, field, "unknown field")
		}
	}
	switch {
	case ev.Board == "":
		return ev, laurel.FieldErrorf(laurel.EInvalid, f+"board", "is required")
	case !hasMember:
		return ev, laurel.FieldErrorf(laurel.EInvalid, f+"member", "is required")
	case !hasValue:
		return ev, laurel.FieldErrorf(laurel.EInvalid, f+"value", "is required")
	}
	return ev, nil
}

func refIsNull(raw json.RawMessage) bool { return string(raw) == "null" }

func refDecodeString(field string, raw json.RawMessage) (string, error) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", laurel.FieldErrorf(laurel.EInvalid, field, "must be a string")
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", laurel.FieldErrorf(laurel.EInvalid, field, "must be a string")
	}
	return s, nil
}

// decodeInt reads a JSON integer that fits an int64: no fraction, no exponent, no quotes.
func refDecodeInt(field string, raw json.RawMessage) (int64, error) {
	s := string(raw)
	if s == "" || !(s[0] == '-' || s[0] >= '0' && s[0] <= '9') || strings.ContainsAny(s, ".eE") {
		return 0, laurel.FieldErrorf(laurel.EInvalid, field, "must be an integer")
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, laurel.FieldErrorf(laurel.EInvalid, field, "must be an integer from -9223372036854775808 to 9223372036854775807")
		}
		return 0, laurel.FieldErrorf(laurel.EInvalid, field, "must be an integer")
	}
	return v, nil
}
