package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"github.com/laurel/laurel/http/internal/wire"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

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
	if !utf8.Valid(b) {
		// encoding/json would turn each bad byte into U+FFFD, so that "u\xff" and "u\xfe"
		// became the same member.
		return nil, laurel.Errorf(laurel.EInvalid, "the request body is not valid UTF-8")
	}
	if i := wire.LoneSurrogate(b); i >= 0 {
		// The JSON decoders turn one into U+FFFD: "\ud800" and "\udc00" were the same member.
		return nil, laurel.Errorf(laurel.EInvalid, "the request body has an unpaired surrogate escape at byte %d: a string must be valid UTF-16", i)
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

// readJSON reads the request body (readBody) and decodes it into v (decodeStrict).
func (s *Server) readJSON(w http.ResponseWriter, r *http.Request, v any, emptyOK bool) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	return decodeStrict(body, v, emptyOK)
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
	if string(bytes.TrimSpace(body)) == "null" {
		return laurel.Errorf(laurel.EInvalid, "malformed request: want a JSON object, not null")
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

// eventIndex is the index of the event of a batch that err names (field "events[3].value"),
// 0 when it names none.
func eventIndex(err error) int {
	var e *laurel.Error
	if !errors.As(err, &e) {
		return 0
	}
	rest, ok := strings.CutPrefix(e.Field, "events[")
	if !ok {
		return 0
	}
	n, _, _ := strings.Cut(rest, "]")
	i, err := strconv.Atoi(n)
	if err != nil || i < 0 {
		return 0
	}
	return i
}

// The request bodies as the Client writes them. The server reads events field by field
// (wire.DecodeEvents) to name the field at fault precisely; these types spell the same shapes.

// eventJSON is one event of a submit. Board is nil when the board is in the path.
type eventJSON struct {
	Board  *string         `json:"board,omitempty"`
	Member string          `json:"member"`
	Value  int64           `json:"value"`
	Sub    *int64          `json:"subscore,omitempty"` // nil: none
	TS     string          `json:"ts,omitempty"`
	ID     string          `json:"id,omitempty"`
	Name   *string         `json:"name,omitempty"`
	Tag    json.RawMessage `json:"tag,omitempty"`
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

// bodiless is h on a route that takes no body: a body other than an empty object is refused
// (invalid_argument), as a field of a body that takes it would be, rather than ignored.
func (s *Server) bodiless(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := s.readJSON(w, r, &struct{}{}, true); err != nil {
			s.writeError(w, r, err)
			return
		}
		h(w, r)
	}
}
