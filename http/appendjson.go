package http

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/laurel/laurel"
)

// Hand-written encoders of the hot answers (pages, member entries, submit results). They
// write exactly the bytes that encoding/json writes for pageOf, memberEntryOf and resultsOf
// (appendjson_test.go and FuzzEncodeJSON check it), without reflection and with no
// allocation beyond the buffer: over HTTP, reflection and its garbage were most of the cost
// of a top-100 read.

// errBadMetadata stands for the error encoding/json returns for metadata that is not JSON.
var errBadMetadata = errors.New("laurel http: metadata is not valid JSON")

// appendPage appends p as JSON, without a newline, as writeJSON(pageOf(p)) would write it.
// Metadata that is not valid JSON (it is validated when stored) is written as null.
func appendPage(dst []byte, p laurel.Page) []byte {
	b, _ := encodePage(dst, p)
	return b
}

// encodePage is appendPage that also reports metadata that is not valid JSON, for which
// encoding/json fails the whole answer.
func encodePage(dst []byte, p laurel.Page) ([]byte, error) {
	var err error
	dst = append(dst, `{"board":`...)
	dst = appendString(dst, p.Board)
	dst = append(dst, `,"window":`...)
	dst = appendString(dst, p.Window)
	dst = append(dst, `,"period":`...)
	dst = appendPeriod(dst, p.Period, true, false)
	dst = append(dst, `,"total":`...)
	dst = strconv.AppendInt(dst, int64(p.Total), 10)
	dst = append(dst, `,"entries":[`...)
	for i := range p.Entries {
		if i > 0 {
			dst = append(dst, ',')
		}
		var e error
		if dst, e = appendEntry(dst, &p.Entries[i]); e != nil {
			err = e
		}
	}
	dst = append(dst, "]}"...)
	return dst, err
}

// encodeMemberEntry appends me as writeJSON(memberEntryJSON{…}) would write it.
func encodeMemberEntry(dst []byte, me laurel.MemberEntry) ([]byte, error) {
	dst = append(dst, `{"board":`...)
	dst = appendString(dst, me.Board)
	dst = append(dst, `,"window":`...)
	dst = appendString(dst, me.Window)
	dst = append(dst, `,"period":`...)
	dst = appendPeriod(dst, me.Period, true, false)
	dst = append(dst, `,"total":`...)
	dst = strconv.AppendInt(dst, int64(me.Total), 10)
	dst = append(dst, `,"entry":`...)
	dst, err := appendEntry(dst, &me.Entry)
	dst = append(dst, '}')
	return dst, err
}

// appendResults appends the answer of a submit: {"results": [resultJSON, …]}, with each
// result's entries (keys sorted, as encoding/json sorts map keys) only when ranks is set.
func appendResults(dst []byte, results []laurel.EventResult, ranks bool) []byte {
	dst = append(dst, `{"results":[`...)
	var keys [8]string // a board has at most eight windows
	for i := range results {
		res := &results[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"member":`...)
		dst = appendString(dst, res.Member)
		if res.ID != "" {
			dst = append(dst, `,"id":`...)
			dst = appendString(dst, res.ID)
		}
		dst = append(dst, `,"status":`...)
		dst = appendString(dst, res.Status)
		if ranks {
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
				dst = appendString(dst, name)
				dst = append(dst, `:{"rank":`...)
				dst = strconv.AppendInt(dst, int64(st.Rank), 10)
				dst = append(dst, `,"score":`...)
				dst = strconv.AppendInt(dst, st.Score, 10)
				dst = append(dst, '}')
			}
			dst = append(dst, '}')
		}
		dst = append(dst, '}')
	}
	dst = append(dst, "]}"...)
	return dst
}

// appendPeriod appends p as periodOf(p, closed, total) encodes. It never is {}: "all" has
// its id, any other period its start.
func appendPeriod(dst []byte, p laurel.PeriodInfo, closed, total bool) []byte {
	dst = append(dst, '{')
	if p.ID != "" {
		dst = append(dst, `"id":`...)
		dst = appendString(dst, p.ID)
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

// appendEntry appends e as entryOf(e) encodes; bad metadata is written as null.
func appendEntry(dst []byte, e *laurel.Entry) ([]byte, error) {
	dst = append(dst, `{"rank":`...)
	dst = strconv.AppendInt(dst, int64(e.Rank), 10)
	dst = append(dst, `,"member":`...)
	dst = appendString(dst, e.Member)
	dst = append(dst, `,"score":`...)
	dst = strconv.AppendInt(dst, e.Score, 10)
	dst = append(dst, `,"reached_at":`...)
	dst = appendTimeString(dst, e.ReachedAt)
	if e.Name != "" {
		dst = append(dst, `,"name":`...)
		dst = appendString(dst, e.Name)
	}
	var err error
	if len(e.Metadata) > 0 {
		dst = append(dst, `,"metadata":`...)
		if dst, err = appendCompact(dst, e.Metadata); err != nil {
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

// appendString appends s as a JSON string as encoding/json does: HTML-safe, U+2028 and
// U+2029 escaped, invalid UTF-8 replaced by \ufffd.
func appendString(dst []byte, s string) []byte {
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

// appendCompact appends the JSON src as encoding/json writes a json.RawMessage: whitespace
// dropped, '<', '>', '&', U+2028 and U+2029 escaped, anything else (invalid UTF-8 in strings
// included) as it is. On invalid JSON it returns dst unchanged and errBadMetadata.
func appendCompact(dst, src []byte) ([]byte, error) {
	if !json.Valid(src) {
		return dst, errBadMetadata
	}
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
	return append(dst, src[start:]...), nil
}

// Response buffers are pooled: a top-100 page is ~10 KiB, and a fresh one per read was
// garbage the collector then had to chase while readers wait.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// maxPooledBuf bounds what the pool keeps, so that one huge lookup does not pin its buffer.
const maxPooledBuf = 256 << 10

// jsonContentType is shared by every answer, never modified: net/http copies the header
// values when it writes them.
var jsonContentType = []string{"application/json"}

func getBuf() *[]byte { return bufPool.Get().(*[]byte) }

// putBuf gives b, grown from *bp, back to the pool.
func putBuf(bp *[]byte, b []byte) {
	if cap(b) <= maxPooledBuf {
		*bp = b[:0]
		bufPool.Put(bp)
	}
}

// writeBody answers 200 with the JSON body b and a newline, as writeJSON does, and gives
// the buffer back.
func writeBody(w http.ResponseWriter, bp *[]byte, b []byte) {
	b = append(b, '\n')
	h := w.Header()
	h["Content-Type"] = jsonContentType
	// A known length spares the chunked encoding that bodies over 2 KiB otherwise get.
	h["Content-Length"] = []string{strconv.Itoa(len(b))}
	w.WriteHeader(http.StatusOK)
	w.Write(b)
	putBuf(bp, b)
}

// writePage answers with p, as writeJSON(w, http.StatusOK, pageOf(p)) did; on bad stored
// metadata writeJSON fails the answer as it always did.
func writePage(w http.ResponseWriter, p laurel.Page) {
	bp := getBuf()
	b, err := encodePage((*bp)[:0], p)
	if err != nil {
		putBuf(bp, b)
		writeJSON(w, http.StatusOK, pageOf(p))
		return
	}
	writeBody(w, bp, b)
}

// writeMemberEntry answers with me, as writeJSON(w, http.StatusOK, memberEntryOf(me)) did.
func writeMemberEntry(w http.ResponseWriter, me laurel.MemberEntry) {
	bp := getBuf()
	b, err := encodeMemberEntry((*bp)[:0], me)
	if err != nil {
		putBuf(bp, b)
		writeJSON(w, http.StatusOK, memberEntryOf(me))
		return
	}
	writeBody(w, bp, b)
}

// writeResults answers a submit with its results, as writeJSON(resultsOf(…)) did.
func writeResults(w http.ResponseWriter, results []laurel.EventResult, ranks bool) {
	bp := getBuf()
	writeBody(w, bp, appendResults((*bp)[:0], results, ranks))
}
