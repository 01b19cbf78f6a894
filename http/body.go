package http

import (
	"github.com/laurel/laurel/http/internal/wire"
	"net/http"
	"strconv"
	"sync"

	"github.com/laurel/laurel"
)

// The hot answers (pages, member entries, submit results) are encoded by package wire without
// reflection, into pooled buffers, and written with their length.

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
	b, err := wire.EncodePage((*bp)[:0], p)
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
	b, err := wire.EncodeMemberEntry((*bp)[:0], me)
	if err != nil {
		putBuf(bp, b)
		writeJSON(w, http.StatusOK, memberEntryOf(me))
		return
	}
	writeBody(w, bp, b)
}

// writeResults answers a submit with its results, as writeJSON(resultsOf(…)) does; subs are
// the boards whose standings show subscores.
func writeResults(w http.ResponseWriter, results []laurel.EventResult, ranks bool, subs map[string]bool) {
	bp := getBuf()
	writeBody(w, bp, wire.AppendResults((*bp)[:0], results, ranks, subs))
}
