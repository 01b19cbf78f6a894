package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/laurel/laurel"
)

// readBody reads a request body of at most the configured size.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, laurel.Errorf(laurel.ETooLarge, "the request body must be at most %s", formatBytes(s.cfg.MaxBody))
		}
		return nil, laurel.Errorf(laurel.EInvalid, "could not read the request body")
	}
	return b, nil
}

func formatBytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// decodeStrict decodes one JSON value of body into v, rejecting unknown fields and trailing
// data. An empty body decodes to nothing when emptyOK. Errors are invalid_argument with the
// field at fault when there is one.
func decodeStrict(body []byte, v any, emptyOK bool) error {
	if len(bytes.TrimSpace(body)) == 0 {
		if emptyOK {
			return nil
		}
		return laurel.Errorf(laurel.EInvalid, "the request body is empty: want a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return laurel.Errorf(laurel.EInvalid, "malformed JSON: unexpected data after the object")
	}
	return nil
}

// jsonError turns an encoding/json error into an invalid_argument.
func jsonError(err error) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		if typeErr.Field == "" {
			return laurel.Errorf(laurel.EInvalid, "malformed request: want a JSON object")
		}
		return laurel.FieldErrorf(laurel.EInvalid, typeErr.Field, "must be %s", kindName(typeErr.Type))
	case errors.As(err, &syntaxErr):
		return laurel.Errorf(laurel.EInvalid, "malformed JSON: %s", syntaxErr.Error())
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return laurel.Errorf(laurel.EInvalid, "malformed JSON: unexpected end of input")
	}
	if msg := err.Error(); strings.HasPrefix(msg, "json: unknown field ") {
		name, uerr := strconv.Unquote(strings.TrimPrefix(msg, "json: unknown field "))
		if uerr != nil {
			name = strings.TrimPrefix(msg, "json: unknown field ")
		}
		return laurel.FieldErrorf(laurel.EInvalid, name, "unknown field")
	}
	return laurel.Errorf(laurel.EInvalid, "malformed JSON")
}

func kindName(t reflect.Type) string {
	if t == nil {
		return "of another type"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "of another type"
}

// decodeEvents reads the body of an event submit: one event {"member", "value", "ts", "id",
// "name"} or a batch {"events": [...]} of at most laurel.MaxBatch. With board set (POST
// /v1/boards/{board}/events) every event goes to that board and may not name one; with board
// empty (POST /v1/events) every event must name its "board". single reports whether the body
// was one event, whose fields are then named without the "events[0]." prefix.
//
// Every event returned has a valid board id, member id, event id and name, and its ts, when
// set, within the years that laurel.ParseTime reads.
func decodeEvents(body []byte, board string) (events []laurel.Event, single bool, err error) {
	top, err := decodeObject("", body)
	if err != nil {
		return nil, false, err
	}
	raw, batch := top["events"]
	if !batch {
		ev, err := decodeEvent("", top, board)
		if err != nil {
			return nil, true, err
		}
		return []laurel.Event{ev}, true, nil
	}
	for _, k := range sortedKeys(top) {
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
		obj, err := decodeObject(prefix, item)
		if err != nil {
			return nil, false, err
		}
		if events[i], err = decodeEvent(prefix+".", obj, board); err != nil {
			return nil, false, err
		}
	}
	return events, false, nil
}

// decodeObject reads a JSON object into its members.
func decodeObject(field string, raw []byte) (map[string]json.RawMessage, error) {
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

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// decodeEvent reads one event's fields; f prefixes the names of the fields in errors.
func decodeEvent(f string, obj map[string]json.RawMessage, board string) (laurel.Event, error) {
	ev := laurel.Event{Board: board}
	hasMember, hasValue := false, false
	for _, k := range sortedKeys(obj) {
		raw := obj[k]
		field := f + k
		switch k {
		case "board":
			if board != "" {
				return ev, laurel.FieldErrorf(laurel.EInvalid, field, "unknown field: the board is in the path")
			}
			s, err := decodeString(field, raw)
			if err != nil {
				return ev, err
			}
			if err := laurel.ValidateBoardID(s); err != nil {
				return ev, laurel.FieldErrorf(laurel.EInvalid, field, "%s", laurel.ErrorMessage(err))
			}
			ev.Board = s
		case "member":
			s, err := decodeString(field, raw)
			if err != nil {
				return ev, err
			}
			if err := laurel.ValidateMember(field, s); err != nil {
				return ev, err
			}
			ev.Member, hasMember = s, true
		case "value":
			v, err := decodeInt(field, raw)
			if err != nil {
				return ev, err
			}
			ev.Value, hasValue = v, true
		case "ts":
			if isNull(raw) {
				continue
			}
			s, err := decodeString(field, raw)
			if err != nil {
				return ev, err
			}
			ts, err := laurel.ParseTime(s)
			if err != nil {
				return ev, laurel.FieldErrorf(laurel.EInvalid, field, "%s", laurel.ErrorMessage(err))
			}
			ev.TS, ev.HasTS = ts, true
		case "id":
			if isNull(raw) {
				continue
			}
			s, err := decodeString(field, raw)
			if err != nil {
				return ev, err
			}
			if err := laurel.ValidateEventID(field, s); err != nil {
				return ev, err
			}
			ev.ID = s
		case "name":
			if isNull(raw) {
				continue
			}
			s, err := decodeString(field, raw)
			if err != nil {
				return ev, err
			}
			if err := laurel.ValidateName(field, s); err != nil {
				return ev, err
			}
			ev.Name = &s
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

func isNull(raw json.RawMessage) bool { return string(raw) == "null" }

func decodeString(field string, raw json.RawMessage) (string, error) {
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
func decodeInt(field string, raw json.RawMessage) (int64, error) {
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

// fixEventField renames the field of a service error about the events of a request: without
// the "events[0]." prefix for a single event, and "board" for the board of the path.
func fixEventField(err error, single, boardInPath bool) error {
	var e *laurel.Error
	if !errors.As(err, &e) || e.Field == "" {
		return err
	}
	field := e.Field
	if single && strings.HasPrefix(field, "events[0].") {
		field = strings.TrimPrefix(field, "events[0].")
	}
	if boardInPath && (field == "board" || strings.HasSuffix(field, "].board")) {
		field = "board"
	}
	if field == e.Field {
		return err
	}
	return &laurel.Error{Code: e.Code, Message: e.Message, Field: field}
}

// The request bodies as the Client writes them. The server reads events field by field
// (decodeEvents) to name the field at fault precisely; these types spell the same shapes.

// eventJSON is one event of a submit. Board is nil when the board is in the path.
type eventJSON struct {
	Board  *string `json:"board,omitempty"`
	Member string  `json:"member"`
	Value  int64   `json:"value"`
	TS     string  `json:"ts,omitempty"`
	ID     string  `json:"id,omitempty"`
	Name   *string `json:"name,omitempty"`
}

// eventsJSON is a batch of events.
type eventsJSON struct {
	Events []eventJSON `json:"events"`
}

// lookupJSON is the body of POST /v1/boards/{board}/lookup, as handleLookup reads it.
type lookupJSON struct {
	Members []string `json:"members"`
	Window  *string  `json:"window,omitempty"`
	At      *string  `json:"at,omitempty"`
	Period  *string  `json:"period,omitempty"`
}

// profileSpecJSON is the body of PUT /v1/members/{member}, as handlePutProfile reads it.
type profileSpecJSON struct {
	Name     *string         `json:"name,omitempty"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// boardSpecJSON is the body of PUT /v1/boards/{board}: a laurel.BoardSpec, except that an
// empty, non-nil windows list is sent (and rejected by the server) rather than left out.
type boardSpecJSON struct {
	laurel.BoardSpec
	Windows []string `json:"windows,omitzero"`
}
