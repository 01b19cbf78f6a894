package wire

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/laurel/laurel"
)

// errBadMetadata stands for the error encoding/json returns for metadata that is not JSON.
var errBadMetadata = errors.New("laurel http: metadata is not valid JSON")

// AppendPage appends p as JSON, without a newline, as writeJSON(pageOf(p)) would write it.
// Metadata that is not valid JSON (it is validated when stored) is written as null.
func AppendPage(dst []byte, p laurel.Page) []byte {
	b, _ := EncodePage(dst, p)
	return b
}

// EncodePage is AppendPage that also reports metadata that is not valid JSON, for which
// encoding/json fails the whole answer.
func EncodePage(dst []byte, p laurel.Page) ([]byte, error) {
	var err error
	dst = append(dst, `{"board":`...)
	dst = AppendString(dst, p.Board)
	dst = append(dst, `,"window":`...)
	dst = AppendString(dst, p.Window)
	dst = append(dst, `,"period":`...)
	dst = AppendPeriod(dst, p.Period, true, false)
	dst = append(dst, `,"total":`...)
	dst = strconv.AppendInt(dst, int64(p.Total), 10)
	dst = append(dst, `,"entries":[`...)
	for i := range p.Entries {
		if i > 0 {
			dst = append(dst, ',')
		}
		var e error
		if dst, e = appendEntry(dst, &p.Entries[i], p.HasSub); e != nil {
			err = e
		}
	}
	dst = append(dst, "]}"...)
	return dst, err
}

// EncodeMemberEntry appends me as writeJSON(memberEntryJSON{…}) would write it.
func EncodeMemberEntry(dst []byte, me laurel.MemberEntry) ([]byte, error) {
	dst = append(dst, `{"board":`...)
	dst = AppendString(dst, me.Board)
	dst = append(dst, `,"window":`...)
	dst = AppendString(dst, me.Window)
	dst = append(dst, `,"period":`...)
	dst = AppendPeriod(dst, me.Period, true, false)
	dst = append(dst, `,"total":`...)
	dst = strconv.AppendInt(dst, int64(me.Total), 10)
	dst = append(dst, `,"entry":`...)
	dst, err := appendEntry(dst, &me.Entry, me.HasSub)
	dst = append(dst, '}')
	return dst, err
}

// AppendResults appends the answer of a submit: {"results": [resultJSON, …]}, with each
// result's entries (keys sorted, as encoding/json sorts map keys) only when ranks is set. The
// standings of a result on a board of subs (those with a subscore; nil: none) show their
// subscores.
func AppendResults(dst []byte, results []laurel.EventResult, ranks bool, subs map[string]bool) []byte {
	dst = append(dst, `{"results":[`...)
	var keys [8]string // a board has at most eight windows
	for i := range results {
		res := &results[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"member":`...)
		dst = AppendString(dst, res.Member)
		if res.ID != "" {
			dst = append(dst, `,"id":`...)
			dst = AppendString(dst, res.ID)
		}
		dst = append(dst, `,"status":`...)
		dst = AppendString(dst, res.Status)
		if res.Flag != "" {
			dst = append(dst, `,"flag":`...)
			dst = AppendString(dst, res.Flag)
		}
		if ranks {
			hasSub := subs[res.Board]
			names := keys[:0]
			for name := range res.Entries {
				names = append(names, name)
			}
			slices.Sort(names)
			dst = append(dst, `,"entries":{`...)
			for j, name := range names {
				if j > 0 {
					dst = append(dst, ',')
				}
				st := res.Entries[name]
				dst = AppendString(dst, name)
				dst = append(dst, `:{"rank":`...)
				dst = strconv.AppendInt(dst, int64(st.Rank), 10)
				dst = append(dst, `,"score":`...)
				dst = strconv.AppendInt(dst, st.Score, 10)
				if hasSub {
					dst = append(dst, `,"subscore":`...)
					dst = strconv.AppendInt(dst, st.Sub, 10)
				}
				if prev, ok := res.Previous[name]; ok {
					dst = append(dst, `,"previous":{"rank":`...)
					dst = strconv.AppendInt(dst, int64(prev.Rank), 10)
					dst = append(dst, `,"score":`...)
					dst = strconv.AppendInt(dst, prev.Score, 10)
					if hasSub {
						dst = append(dst, `,"subscore":`...)
						dst = strconv.AppendInt(dst, prev.Sub, 10)
					}
					dst = append(dst, '}')
				}
				dst = append(dst, '}')
			}
			dst = append(dst, '}')
		}
		dst = append(dst, '}')
	}
	dst = append(dst, "]}"...)
	return dst
}

// AppendPeriod appends p as periodOf(p, closed, total) encodes. It never is {}: "all" has
// its id, any other period its start.
func AppendPeriod(dst []byte, p laurel.PeriodInfo, closed, total bool) []byte {
	dst = append(dst, '{')
	if p.ID != "" {
		dst = append(dst, `"id":`...)
		dst = AppendString(dst, p.ID)
	}
	if p.ID != "all" {
		if p.ID != "" {
			dst = append(dst, ',')
		}
		dst = append(dst, `"start":`...)
		dst = appendTimeString(dst, p.Start)
		dst = append(dst, `,"end":`...)
		dst = appendTimeString(dst, p.End)
		if closed && p.ID != "" {
			dst = append(dst, `,"closed":`...)
			dst = strconv.AppendBool(dst, p.Closed)
		}
	}
	if total {
		dst = append(dst, `,"total":`...)
		dst = strconv.AppendInt(dst, int64(p.Total), 10)
	}
	return append(dst, '}')
}

// appendEntry appends e as entryOf(e, hasSub) encodes; bad metadata is written as null.
func appendEntry(dst []byte, e *laurel.Entry, hasSub bool) ([]byte, error) {
	dst = append(dst, `{"rank":`...)
	dst = strconv.AppendInt(dst, int64(e.Rank), 10)
	dst = append(dst, `,"member":`...)
	dst = AppendString(dst, e.Member)
	dst = append(dst, `,"score":`...)
	dst = strconv.AppendInt(dst, e.Score, 10)
	if hasSub {
		dst = append(dst, `,"subscore":`...)
		dst = strconv.AppendInt(dst, e.Sub, 10)
	}
	dst = append(dst, `,"reached_at":`...)
	dst = appendTimeString(dst, e.ReachedAt)
	if e.Percentile != nil {
		dst = append(dst, `,"percentile":`...)
		dst = strconv.AppendFloat(dst, *e.Percentile, 'f', -1, 64) // as encoding/json writes it
	}
	if e.Name != "" {
		dst = append(dst, `,"name":`...)
		dst = AppendString(dst, e.Name)
	}
	if len(e.Tag) > 0 {
		dst = append(dst, `,"tag":`...)
		dst = appendValid(dst, e.Tag) // valid JSON: laurel.NormalizeTag let it in, and stores keep it as it came
	}
	var err error
	if len(e.Metadata) > 0 {
		dst = append(dst, `,"metadata":`...)
		if dst, err = AppendCompact(dst, e.Metadata); err != nil {
			dst = append(dst, "null"...)
		}
	}
	return append(dst, '}'), err
}

// appendTimeString appends laurel.FormatTime(ms) in quotes; it never needs escaping.
func appendTimeString(dst []byte, ms int64) []byte {
	dst = append(dst, '"')
	dst = laurel.AppendTime(dst, ms)
	return append(dst, '"')
}

const hexDigits = "0123456789abcdef"

// safeASCII marks the ASCII bytes that encoding/json writes as they are, HTML escaping on:
// not controls, '"', '\\', '<', '>' or '&'.
var safeASCII = func() (t [utf8.RuneSelf]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		t[c] = true
	}
	t['"'], t['\\'], t['<'], t['>'], t['&'] = false, false, false, false, false
	return t
}()

// AppendString appends s as a JSON string as encoding/json does: HTML-safe, U+2028 and
// U+2029 escaped, invalid UTF-8 replaced by \ufffd.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if safeASCII[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		} else if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
		} else {
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendCompact appends the JSON src as encoding/json writes a json.RawMessage: whitespace
// dropped, '<', '>', '&', U+2028 and U+2029 escaped, anything else (invalid UTF-8 in strings
// included) as it is. On invalid JSON it returns dst unchanged and errBadMetadata.
func AppendCompact(dst, src []byte) ([]byte, error) {
	if !json.Valid(src) {
		return dst, errBadMetadata
	}
	return appendValid(dst, src), nil
}

// appendValid is AppendCompact for src known to be valid JSON, which it does not check again
// (a tag on every entry of a page: its check was 1.8% of the server CPU of a tagged bench).
func appendValid(dst, src []byte) []byte {
	// src is valid: '<', '>', '&' and the bytes of U+2028/U+2029 can only be in strings,
	// and whitespace outside them is insignificant.
	inString, escaped := false, false
	start := 0
	for i := 0; i < len(src); i++ {
		c := src[i]
		if inString {
			switch {
			case escaped:
				escaped = false
				continue
			case c == '\\':
				escaped = true
				continue
			case c == '"':
				inString = false
				continue
			case c == '<' || c == '>' || c == '&':
				dst = append(dst, src[start:i]...)
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
				start = i + 1
			case c == 0xE2 && i+2 < len(src) && src[i+1] == 0x80 && src[i+2]&^1 == 0xA8:
				dst = append(dst, src[start:i]...)
				dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[src[i+2]&0xF])
				i += 2
				start = i + 1
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case ' ', '\t', '\n', '\r':
			dst = append(dst, src[start:i]...)
			start = i + 1
		}
	}
	return append(dst, src[start:]...)
}
