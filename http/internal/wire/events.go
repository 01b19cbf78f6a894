package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/laurel/laurel"
)

// DecodeEvents reads the body of an event submit: one event {"member", "value", "ts", "id",
// "name", "subscore", "tag"} or a batch {"events": [...]} of at most laurel.MaxBatch. With board set (POST
// /v1/boards/{board}/events) every event goes to that board and may not name one; with board
// empty (POST /v1/events) every event must name its "board". single reports whether the body
// was one event, whose fields are then named without the "events[0]." prefix.
//
// Every event returned has a valid board id, member id, event id, name and tag (compact), and
// its ts, when set, within the years that laurel.ParseTime reads.
//
// It reads the body in one pass, without encoding/json, but answers exactly as reading it
// into a map of json.RawMessage per object would (the reference in decode_ref_test.go): any
// syntax error in the body comes first, with encoding/json's message; a repeated key counts
// only for its last value; and of an object's faults the one at the smallest key is reported.
func DecodeEvents(body []byte, board string) (events []laurel.Event, single bool, err error) {
	data := bytes.TrimSpace(body)
	if len(data) == 0 {
		return nil, false, laurel.Errorf(laurel.EInvalid, "the request body is empty: want a JSON object")
	}
	if data[0] != '{' {
		return nil, false, laurel.Errorf(laurel.EInvalid, "malformed request: want a JSON object")
	}
	d := eventsDecoder{data: data, board: board}
	if !d.top() {
		return nil, false, syntaxError(data)
	}
	if !d.batch {
		ev, err := d.single.event(-1)
		if err != nil {
			return nil, true, err
		}
		return []laurel.Event{ev}, true, nil
	}
	switch {
	case d.hasOther:
		return nil, false, laurel.FieldErrorf(laurel.EInvalid, d.other, "unknown field: a batch holds only \"events\"")
	case d.notArray:
		return nil, false, laurel.FieldErrorf(laurel.EInvalid, "events", "must be an array of events")
	case d.n == 0:
		return nil, false, laurel.FieldErrorf(laurel.EInvalid, "events", "must hold at least one event")
	case d.n > laurel.MaxBatch:
		return nil, false, laurel.FieldErrorf(laurel.ETooLarge, "events", "must hold at most %d events", laurel.MaxBatch)
	case d.itemErr != nil:
		return nil, false, d.itemErr
	}
	return d.events, false, nil
}

// syntaxError reports the first syntax error of data as encoding/json words it: errors are
// rare, so it is simplest to let encoding/json find it again.
func syntaxError(data []byte) error {
	var v json.RawMessage
	var syntaxErr *json.SyntaxError
	if err := json.Unmarshal(data, &v); errors.As(err, &syntaxErr) {
		return laurel.Errorf(laurel.EInvalid, "malformed JSON: %s", syntaxErr.Error())
	}
	return laurel.Errorf(laurel.EInvalid, "malformed JSON")
}

// maxDepth is how deeply encoding/json lets arrays and objects nest.
const maxDepth = 10000

// eventsDecoder reads an event submit. Faults other than syntax errors are only recorded
// while reading, since a syntax error anywhere, a later value of the same key, or a fault at a
// smaller key would take precedence.
type eventsDecoder struct {
	data  []byte
	pos   int
	board string // of the path

	// The top-level object is read both as one event and as a batch until its end tells which
	// it is: a batch when it has "events".
	single   eventFields
	batch    bool
	hasOther bool
	other    string // the smallest key other than "events"

	// The last "events" value.
	notArray bool
	n        int            // its items
	events   []laurel.Event // its first items, up to the first bad one or MaxBatch
	itemErr  error          // the fault of its first bad item

	lastBoard string // the board of the previous event, whose string is shared when repeated
}

// eventFields is what the fields of one event object have said so far.
type eventFields struct {
	ev         laurel.Event
	hasMember  bool
	hasValue   bool
	errs       [len(eventKeys)]error // the fault of the last value of each key, if any
	hasUnknown bool
	unknown    string // the smallest unknown key
}

// eventKeys are the keys of an event, sorted, as faults are reported in that order.
var eventKeys = [...]string{"board", "id", "member", "name", "subscore", "tag", "ts", "value"}

const (
	keyBoard = iota
	keyID
	keyMember
	keyName
	keySub
	keyTag
	keyTS
	keyValue
)

// fieldName names the field k of event idx in errors: idx < 0 is a single event.
func fieldName(idx int, k string) string {
	if idx < 0 {
		return k
	}
	return "events[" + strconv.Itoa(idx) + "]." + k
}

// event returns the event, or the fault at its smallest key, or a missing field.
func (a *eventFields) event(idx int) (laurel.Event, error) {
	for i, k := range eventKeys {
		if a.hasUnknown && a.unknown < k {
			break
		}
		if a.errs[i] != nil {
			return laurel.Event{}, a.errs[i]
		}
	}
	switch {
	case a.hasUnknown:
		return laurel.Event{}, laurel.FieldErrorf(laurel.EInvalid, fieldName(idx, a.unknown), "unknown field")
	case a.ev.Board == "":
		return laurel.Event{}, laurel.FieldErrorf(laurel.EInvalid, fieldName(idx, "board"), "is required")
	case !a.hasMember:
		return laurel.Event{}, laurel.FieldErrorf(laurel.EInvalid, fieldName(idx, "member"), "is required")
	case !a.hasValue:
		return laurel.Event{}, laurel.FieldErrorf(laurel.EInvalid, fieldName(idx, "value"), "is required")
	}
	return a.ev, nil
}

// top reads the top-level object; false is a syntax error.
func (d *eventsDecoder) top() bool {
	d.single.ev.Board = d.board
	d.pos = 1 // past '{'
	d.ws()
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		return d.end()
	}
	for {
		k, ok := d.key()
		if !ok {
			return false
		}
		if string(k) == "events" {
			d.batch = true
			if !d.eventsValue() {
				return false
			}
		} else {
			if !d.hasOther || string(k) < d.other {
				d.hasOther, d.other = true, keyString(k)
			}
			if !d.field(&d.single, -1, k, 1) {
				return false
			}
		}
		if more, ok := d.next('}'); !ok || !more {
			return ok && d.end()
		}
	}
}

// next reads what follows a member of an object or an element of an array: ',' and more
// follow, or close and none do. ok is false on anything else.
func (d *eventsDecoder) next(close byte) (more, ok bool) {
	d.ws()
	if d.pos >= len(d.data) {
		return false, false
	}
	c := d.data[d.pos]
	d.pos++
	switch c {
	case ',':
		d.ws()
		return true, true
	case close:
		return false, true
	}
	return false, false
}

// end checks that nothing but whitespace follows the top-level object.
func (d *eventsDecoder) end() bool {
	d.ws()
	return d.pos == len(d.data)
}

// eventsValue reads the value of "events", which replaces any earlier one.
func (d *eventsDecoder) eventsValue() bool {
	d.notArray, d.n, d.events, d.itemErr = false, 0, d.events[:0], nil
	if d.pos >= len(d.data) || d.data[d.pos] != '[' {
		d.notArray = true
		return d.skip(1)
	}
	d.pos++
	if d.events == nil {
		// About one '{' per event: one allocation for the batch.
		d.events = make([]laurel.Event, 0, max(1, min(bytes.Count(d.data[d.pos:], []byte{'{'}), laurel.MaxBatch)))
	}
	d.ws()
	if d.pos < len(d.data) && d.data[d.pos] == ']' {
		d.pos++
		return true
	}
	var a eventFields
	for {
		d.ws()
		switch {
		case d.itemErr != nil || d.n >= laurel.MaxBatch:
			// Only the syntax and the count matter now.
			if !d.skip(2) {
				return false
			}
		case d.pos < len(d.data) && d.data[d.pos] == '{':
			a = eventFields{ev: laurel.Event{Board: d.board}}
			if !d.object(&a, d.n) {
				return false
			}
			if ev, err := a.event(d.n); err != nil {
				d.itemErr = err
			} else {
				d.events = append(d.events, ev)
			}
		default:
			d.itemErr = laurel.FieldErrorf(laurel.EInvalid, "events["+strconv.Itoa(d.n)+"]", "must be an object")
			if !d.skip(2) {
				return false
			}
		}
		d.n++
		if more, ok := d.next(']'); !ok || !more {
			return ok
		}
	}
}

// object reads the object of event idx of a batch, at depth 3.
func (d *eventsDecoder) object(a *eventFields, idx int) bool {
	d.pos++ // past '{'
	d.ws()
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		return true
	}
	for {
		k, ok := d.key()
		if !ok || !d.field(a, idx, k, 3) {
			return false
		}
		if more, ok := d.next('}'); !ok || !more {
			return ok
		}
	}
}

// key reads an object key, unescaped, and the colon after it.
func (d *eventsDecoder) key() ([]byte, bool) {
	s, plain, ok := d.str()
	if !ok {
		return nil, false
	}
	if !plain {
		s = unquote(s)
	}
	d.ws()
	if d.pos >= len(d.data) || d.data[d.pos] != ':' {
		return nil, false
	}
	d.pos++
	d.ws()
	return s, true
}

// keyString returns k as a string, without allocating for the keys of an event.
func keyString(k []byte) string {
	for _, name := range eventKeys {
		if string(k) == name {
			return name
		}
	}
	return string(k)
}

// Kinds of the value of a string field.
const (
	kindString = iota
	kindNull
	kindOther
)

// strValue reads the value of a field that takes a string; depth is that of its object.
func (d *eventsDecoder) strValue(depth int) (s []byte, plain bool, kind int, ok bool) {
	if d.pos < len(d.data) {
		switch d.data[d.pos] {
		case '"':
			s, plain, ok = d.str()
			return s, plain, kindString, ok
		case 'n':
			return nil, false, kindNull, d.literal("null")
		}
	}
	return nil, false, kindOther, d.skip(depth)
}

// field reads the value of key k of an event; idx < 0 is a single event, and depth is that of
// the event's object.
func (d *eventsDecoder) field(a *eventFields, idx int, k []byte, depth int) bool {
	switch string(k) {
	case "board":
		if d.board != "" {
			a.errs[keyBoard] = laurel.FieldErrorf(laurel.EInvalid, fieldName(idx, "board"), "unknown field: the board is in the path")
			return d.skip(depth)
		}
		raw, plain, kind, ok := d.strValue(depth)
		if !ok {
			return false
		}
		if kind != kindString {
			a.errs[keyBoard] = mustBeString(idx, "board")
			return true
		}
		var s string
		if plain && string(raw) == d.lastBoard {
			s = d.lastBoard
		} else {
			s = stringOf(raw, plain)
		}
		if err := laurel.ValidateBoardID(s); err != nil {
			a.errs[keyBoard] = laurel.FieldErrorf(laurel.EInvalid, fieldName(idx, "board"), "%s", laurel.ErrorMessage(err))
			return true
		}
		a.ev.Board, a.errs[keyBoard], d.lastBoard = s, nil, s
	case "member":
		raw, plain, kind, ok := d.strValue(depth)
		if !ok {
			return false
		}
		if kind != kindString {
			a.errs[keyMember] = mustBeString(idx, "member")
			return true
		}
		s := stringOf(raw, plain)
		// The field is named only when there is a fault, to build its name only then.
		if laurel.ValidateMember("", s) != nil {
			a.errs[keyMember] = laurel.ValidateMember(fieldName(idx, "member"), s)
			return true
		}
		a.ev.Member, a.hasMember, a.errs[keyMember] = s, true, nil
	case "value":
		v, ok, valid := d.integer(a, idx, "value", keyValue, depth)
		if !ok {
			return false
		}
		if valid {
			a.ev.Value, a.hasValue = v, true
		}
	case "subscore":
		if d.pos < len(d.data) && d.data[d.pos] == 'n' {
			if !d.literal("null") {
				return false
			}
			a.ev.Sub, a.ev.HasSub, a.errs[keySub] = 0, false, nil
			return true
		}
		v, ok, valid := d.integer(a, idx, "subscore", keySub, depth)
		if !ok {
			return false
		}
		if valid {
			a.ev.Sub, a.ev.HasSub = v, true
		}
	case "ts":
		raw, plain, kind, ok := d.strValue(depth)
		if !ok {
			return false
		}
		switch kind {
		case kindNull:
			a.ev.TS, a.ev.HasTS, a.errs[keyTS] = 0, false, nil
		case kindOther:
			a.errs[keyTS] = mustBeString(idx, "ts")
		default:
			ts, err := laurel.ParseTime(stringOf(raw, plain))
			if err != nil {
				a.errs[keyTS] = laurel.FieldErrorf(laurel.EInvalid, fieldName(idx, "ts"), "%s", laurel.ErrorMessage(err))
				return true
			}
			a.ev.TS, a.ev.HasTS, a.errs[keyTS] = ts, true, nil
		}
	case "id":
		raw, plain, kind, ok := d.strValue(depth)
		if !ok {
			return false
		}
		switch kind {
		case kindNull:
			a.ev.ID, a.errs[keyID] = "", nil
		case kindOther:
			a.errs[keyID] = mustBeString(idx, "id")
		default:
			s := stringOf(raw, plain)
			if laurel.ValidateGivenEventID("", s) != nil {
				a.errs[keyID] = laurel.ValidateGivenEventID(fieldName(idx, "id"), s)
				return true
			}
			a.ev.ID, a.errs[keyID] = s, nil
		}
	case "name":
		raw, plain, kind, ok := d.strValue(depth)
		if !ok {
			return false
		}
		switch kind {
		case kindNull:
			a.ev.Name, a.errs[keyName] = nil, nil
		case kindOther:
			a.errs[keyName] = mustBeString(idx, "name")
		default:
			s := stringOf(raw, plain)
			if laurel.ValidateName("", s) != nil {
				a.errs[keyName] = laurel.ValidateName(fieldName(idx, "name"), s)
				return true
			}
			a.ev.Name, a.errs[keyName] = &s, nil
		}
	case "tag":
		start := d.pos
		if !d.skip(depth) {
			return false
		}
		tag, err := laurel.NormalizeTag(fieldName(idx, "tag"), d.data[start:d.pos])
		a.ev.Tag, a.errs[keyTag] = tag, err
	default:
		if !a.hasUnknown || string(k) < a.unknown {
			a.hasUnknown, a.unknown = true, string(k)
		}
		return d.skip(depth)
	}
	return true
}

// integer reads the value of key k (index key of eventKeys), an integer in int64's range:
// valid reports that it was one, and records the fault otherwise. ok is false on a syntax
// error.
func (d *eventsDecoder) integer(a *eventFields, idx int, k string, key, depth int) (v int64, ok, valid bool) {
	if d.pos >= len(d.data) || d.data[d.pos] != '-' && (d.data[d.pos] < '0' || d.data[d.pos] > '9') {
		a.errs[key] = laurel.FieldErrorf(laurel.EInvalid, fieldName(idx, k), "must be an integer")
		return 0, d.skip(depth), false
	}
	start := d.pos
	isInt, ok := d.number()
	if !ok {
		return 0, false, false
	}
	if !isInt {
		a.errs[key] = laurel.FieldErrorf(laurel.EInvalid, fieldName(idx, k), "must be an integer")
		return 0, true, false
	}
	v, inRange := parseInt(d.data[start:d.pos])
	if !inRange {
		a.errs[key] = laurel.FieldErrorf(laurel.EInvalid, fieldName(idx, k), "must be an integer from -9223372036854775808 to 9223372036854775807")
		return 0, true, false
	}
	a.errs[key] = nil
	return v, true, true
}

func mustBeString(idx int, k string) error {
	return laurel.FieldErrorf(laurel.EInvalid, fieldName(idx, k), "must be a string")
}

// parseInt reads the digits of a JSON integer; false when it does not fit an int64.
func parseInt(b []byte) (int64, bool) {
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	limit := uint64(1<<63 - 1)
	if neg {
		limit = 1 << 63
	}
	var u uint64
	for _, c := range b {
		digit := uint64(c - '0')
		if u > (limit-digit)/10 {
			return 0, false
		}
		u = u*10 + digit
	}
	if neg {
		return -int64(u), true // 1<<63 wraps to math.MinInt64, as wanted
	}
	return int64(u), true
}

// ws skips JSON whitespace.
func (d *eventsDecoder) ws() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// strPlain marks the bytes that a JSON string holds as they are: not the quote, the
// backslash, control characters or bytes past ASCII (which may not be valid UTF-8).
var strPlain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// str reads a string at d.pos and returns its contents. plain reports that they need no
// unquoting: no escape, and valid UTF-8.
func (d *eventsDecoder) str() (s []byte, plain, ok bool) {
	data := d.data
	if d.pos >= len(data) || data[d.pos] != '"' {
		return nil, false, false
	}
	start := d.pos + 1
	escaped, high := false, false
	for i := start; i < len(data); {
		c := data[i]
		if strPlain[c] {
			i++
			continue
		}
		switch {
		case c == '"':
			s = data[start:i]
			d.pos = i + 1
			return s, !escaped && (!high || utf8.Valid(s)), true
		case c == '\\':
			escaped = true
			if i+1 >= len(data) {
				return nil, false, false
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(data) || !isHex(data[i+2]) || !isHex(data[i+3]) || !isHex(data[i+4]) || !isHex(data[i+5]) {
					return nil, false, false
				}
				i += 6
			default:
				return nil, false, false
			}
		case c < 0x20:
			return nil, false, false
		default:
			high = true
			i++
		}
	}
	return nil, false, false
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// stringOf returns the string that the contents s of a JSON string spell.
func stringOf(s []byte, plain bool) string {
	if !plain {
		s = unquote(s)
	}
	return string(s)
}

// unquote unescapes the contents of a valid JSON string as encoding/json does: invalid UTF-8
// and unpaired surrogates become U+FFFD.
func unquote(s []byte) []byte {
	b := make([]byte, 0, len(s)+utf8.UTFMax)
	for r := 0; r < len(s); {
		c := s[r]
		switch {
		case c == '\\':
			switch e := s[r+1]; e {
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				rr := getu4(s[r:])
				r += 6
				if utf16.IsSurrogate(rr) {
					if dec := utf16.DecodeRune(rr, getu4(s[r:])); dec != unicode.ReplacementChar {
						b = utf8.AppendRune(b, dec)
						r += 6
						continue
					}
					rr = unicode.ReplacementChar
				}
				b = utf8.AppendRune(b, rr)
				continue
			default: // '"', '\\', '/'
				b = append(b, e)
			}
			r += 2
		case c < utf8.RuneSelf:
			b = append(b, c)
			r++
		default:
			rr, size := utf8.DecodeRune(s[r:])
			b = utf8.AppendRune(b, rr)
			r += size
		}
	}
	return b
}

// getu4 reads the \uXXXX escape at the start of s, or returns -1.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c = c - '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// number reads a JSON number at d.pos; isInt reports that it has no fraction or exponent.
func (d *eventsDecoder) number() (isInt, ok bool) {
	data, i := d.data, d.pos
	if i < len(data) && data[i] == '-' {
		i++
	}
	switch {
	case i >= len(data):
		return false, false
	case data[i] == '0':
		i++
	case data[i] >= '1' && data[i] <= '9':
		for i++; i < len(data) && data[i] >= '0' && data[i] <= '9'; i++ {
		}
	default:
		return false, false
	}
	isInt = true
	if i < len(data) && data[i] == '.' {
		isInt = false
		i++
		if i >= len(data) || data[i] < '0' || data[i] > '9' {
			return false, false
		}
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		isInt = false
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i >= len(data) || data[i] < '0' || data[i] > '9' {
			return false, false
		}
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
	}
	d.pos = i
	return isInt, true
}

// literal reads the literal lit (true, false or null) at d.pos.
func (d *eventsDecoder) literal(lit string) bool {
	if len(d.data)-d.pos < len(lit) || string(d.data[d.pos:d.pos+len(lit)]) != lit {
		return false
	}
	d.pos += len(lit)
	return true
}

// skip reads any value at d.pos, checking only its syntax; depth is the nesting of the
// arrays and objects it is in.
func (d *eventsDecoder) skip(depth int) bool {
	var buf [32]byte
	open := buf[:0] // the arrays and objects open within the value: '[' or '{'
	for {
		// A value, at d.pos.
		if d.pos >= len(d.data) {
			return false
		}
		switch c := d.data[d.pos]; {
		case c == '{' || c == '[':
			if depth+len(open)+1 > maxDepth {
				return false
			}
			d.pos++
			d.ws()
			if d.pos < len(d.data) && d.data[d.pos] == c+2 { // '}' or ']': empty
				d.pos++
				break
			}
			open = append(open, c)
			if c == '{' && !d.keyColon() {
				return false
			}
			continue // its first value
		case c == '"':
			if _, _, ok := d.str(); !ok {
				return false
			}
		case c == '-' || c >= '0' && c <= '9':
			if _, ok := d.number(); !ok {
				return false
			}
		case c == 't':
			if !d.literal("true") {
				return false
			}
		case c == 'f':
			if !d.literal("false") {
				return false
			}
		case c == 'n':
			if !d.literal("null") {
				return false
			}
		default:
			return false
		}
		// After a whole value: close what ends here, up to the next value.
		for {
			if len(open) == 0 {
				return true
			}
			d.ws()
			if d.pos >= len(d.data) {
				return false
			}
			c, top := d.data[d.pos], open[len(open)-1]
			d.pos++
			if c == top+2 {
				open = open[:len(open)-1]
				continue
			}
			if c != ',' {
				return false
			}
			d.ws()
			if top == '{' && !d.keyColon() {
				return false
			}
			break
		}
	}
}

// keyColon reads a key that is not needed and the colon after it.
func (d *eventsDecoder) keyColon() bool {
	_, _, ok := d.str()
	return ok && d.colon()
}

// colon reads the colon after a key and the whitespace around it.
func (d *eventsDecoder) colon() bool {
	d.ws()
	if d.pos >= len(d.data) || d.data[d.pos] != ':' {
		return false
	}
	d.pos++
	d.ws()
	return true
}

// LoneSurrogate returns the offset in a JSON text of the first \u escape of a UTF-16
// surrogate that is not one of a pair (a high one followed by a low one), or -1: the
// decoders, this one and encoding/json, make it U+FFFD, so that two such strings are one.
// In JSON every backslash begins an escape, inside a string.
func LoneSurrogate(b []byte) int {
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], '\\')
		if j < 0 || i+j+1 >= len(b) {
			return -1
		}
		i += j
		if b[i+1] != 'u' {
			i += 2
			continue
		}
		switch r := getu4(b[i:]); {
		case utf16.IsSurrogate(r) && r < 0xdc00:
			if lo := getu4(b[i+6:]); lo < 0xdc00 || lo >= 0xe000 {
				return i
			}
			i += 12
		case utf16.IsSurrogate(r):
			return i
		default:
			i += 2 // a bad escape is the JSON decoder's to refuse
		}
	}
}
