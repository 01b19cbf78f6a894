package laurel

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"
	"slices"
	"time"
)

// A dump is everything a store holds, as lines of JSON: `laurel export` writes one, `laurel
// import` loads one into another store, of either store. It is a backup, and the way from
// the embedded store to the scale-out one and back.
//
// The first line is the header, {"laurel_dump": 4}. Then come the profiles and hidden marks,
// the store's records (laurel.Records: webhooks, deliveries, tournaments' entries), then each
// board: its record, its events in arrival order, the aggregates of its open spans
// (open calendar periods, all, every rolling bucket), each kept closed period followed by its
// frozen entries in rank order, and its rank history. A dump holds the store's state, not a
// replay: closed periods are as they were frozen (an event retracted after the close still
// counts in them), and periods that close between the export and the import are closed by
// the importing store as its clock passes them, from the aggregates.

// DumpVersion is the version of the dump format this build writes. It reads it, version 4,
// which is the same without subscores, version 3, which is version 4 without events' tags,
// and version 2, which is version 3 without records (an older laurel refuses a newer dump by
// its header, rather than at its first record).
const DumpVersion = 5

const oldestDumpVersion = 2

// DumpRecord is one line of a dump after the header: exactly one field is set.
type DumpRecord struct {
	Profile *DumpProfile `json:"profile,omitempty"`
	Hidden  *string      `json:"hidden,omitempty"` // a hidden member
	Board   *DumpBoard   `json:"board,omitempty"`
	Event   *DumpEvent   `json:"event,omitempty"`
	Agg     *DumpAgg     `json:"agg,omitempty"`
	Closed  *DumpClosed  `json:"closed,omitempty"`
	Frozen  *DumpFrozen  `json:"frozen,omitempty"`
	History *DumpHistory `json:"history,omitempty"`
	Record  *DumpRec     `json:"record,omitempty"`
	// End is the trailer, the last line of every dump: DumpReader checks it and never
	// returns it.
	End *DumpEnd `json:"end,omitempty"`
}

// DumpEnd is a dump's trailer: how many records came between the header and it, and the
// SHA-256 of every byte before it (header included), so that a truncated or damaged dump is
// refused before anything of it is imported. SHA-256 rather than a CRC: a dump may travel
// and be stored for years, and a cryptographic hash also catches edits, at a cost (a few
// hundred MB/s) that the import's own work dwarfs.
type DumpEnd struct {
	Records int64  `json:"records"`
	SHA256  string `json:"sha256"`
}

// DumpRec is a record of the store's laurel.Records, its value as stored (base64 in JSON).
type DumpRec struct {
	Kind  string `json:"kind"`
	Key   string `json:"key"`
	Value []byte `json:"value"`
}

// DumpProfile is a member's profile.
type DumpProfile struct {
	Member   string          `json:"member"`
	Name     string          `json:"name"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// DumpBoard is a board: its configuration in the API's words, when it was created, and the
// marks of its calendar windows that have any.
type DumpBoard struct {
	ID        string           `json:"id"`
	Config    BoardSpec        `json:"config"`
	CreatedAt int64            `json:"created_at"`
	Marks     map[string]Marks `json:"marks,omitempty"`
}

// DumpEvent is an accepted event. Seq orders a board's events by arrival (the tie-break of
// last mode); a retracted event is kept as the audit trail and counts nowhere.
type DumpEvent struct {
	Board     string `json:"board"`
	Seq       uint64 `json:"seq"`
	Member    string `json:"member"`
	Value     int64  `json:"value"`
	TS        int64  `json:"ts"`
	ID        string `json:"id,omitempty"`
	Retracted bool   `json:"retracted,omitempty"`
	// Tag is the event's tag (version 4 on; nil for none).
	Tag json.RawMessage `json:"tag,omitempty"`
	// Sub is the event's subscore, on a board that has one (version 5 on).
	Sub int64 `json:"subscore,omitempty"`
}

// DumpAgg is a member's aggregate in an open span of a window: a calendar period or rolling
// bucket by its start, or all (start 0).
type DumpAgg struct {
	Board  string `json:"board"`
	Window string `json:"window"`
	Start  int64  `json:"start"`
	Member string `json:"member"`
	Score  int64  `json:"score"`
	Sub    int64  `json:"subscore,omitempty"` // version 5 on
	At     int64  `json:"at"`
}

// DumpClosed is a closed period: its id and span, the members it ranked when it closed
// (hidden ones included), and the frozen ranks of members deleted since.
type DumpClosed struct {
	Board   string   `json:"board"`
	Window  string   `json:"window"`
	ID      string   `json:"id"`
	Start   int64    `json:"start"`
	End     int64    `json:"end"`
	Total   int      `json:"total"`
	Removed []uint32 `json:"removed,omitempty"`
}

// DumpFrozen is one entry of a closed period, with the rank it was frozen with.
type DumpFrozen struct {
	Board  string `json:"board"`
	Window string `json:"window"`
	Start  int64  `json:"start"`
	Rank   uint32 `json:"rank"`
	Member string `json:"member"`
	Score  int64  `json:"score"`
	Sub    int64  `json:"subscore,omitempty"` // version 5 on
	At     int64  `json:"at"`
}

// DumpHistory is a member's standing in each window right after one of its events (the
// event's Seq): window → [score, rank].
type DumpHistory struct {
	Board  string              `json:"board"`
	Member string              `json:"member"`
	Seq    uint64              `json:"seq"`
	TS     int64               `json:"ts"`
	Points map[string][2]int64 `json:"points"`
	// Subs are the subscores of the points, by window, on a board that has one (version 5
	// on; a window left out: 0).
	Subs map[string]int64 `json:"subscores,omitempty"`
}

// Exporter is a store that can write everything it holds as a dump.
type Exporter interface {
	Export(ctx context.Context, w *DumpWriter) error
}

// DumpWriter writes a dump: the header, then records, then the trailer (Close).
type DumpWriter struct {
	w    *bufio.Writer
	enc  *json.Encoder
	hash hash.Hash // of every byte flushed
	n    int64
}

// NewDumpWriter starts a dump on w with its header.
func NewDumpWriter(w io.Writer) (*DumpWriter, error) {
	h := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(w, h), 1<<16)
	d := &DumpWriter{w: bw, enc: json.NewEncoder(bw), hash: h}
	d.enc.SetEscapeHTML(false)
	if err := d.enc.Encode(map[string]int{"laurel_dump": DumpVersion}); err != nil {
		return nil, err
	}
	return d, nil
}

// Write adds a record.
func (d *DumpWriter) Write(r DumpRecord) error {
	d.n++
	return d.enc.Encode(r)
}

// Records is how many records were written.
func (d *DumpWriter) Records() int64 { return d.n }

// Close ends the dump with its trailer and writes what is buffered. A dump without it is
// refused by DumpReader as truncated.
func (d *DumpWriter) Close() error {
	if err := d.w.Flush(); err != nil {
		return err
	}
	end := DumpEnd{Records: d.n, SHA256: hex.EncodeToString(d.hash.Sum(nil))}
	if err := d.enc.Encode(DumpRecord{End: &end}); err != nil {
		return err
	}
	return d.w.Flush()
}

// DumpReader reads a dump and checks it as it goes: every record is valid on its own (ids,
// members, names, metadata, board configurations) and in its place (a record of a board
// follows that board's record and names its windows; events in arrival order; aggregates and
// closed periods at spans of their windows; frozen entries after their closed period, in
// rank order), so that an importer need only store what it reads.
type DumpReader struct {
	r       *bufio.Reader
	version int       // the dump's format
	hash    hash.Hash // of every line before the trailer
	line    int
	n       int64 // records read
	done    bool  // the trailer was read and checked

	boards  map[string]bool
	board   *Board // the board whose records are being read
	lastSeq uint64
	spans   map[dumpSpan]byte // the board's calendar periods: open (aggregates) or closed
	closed  *DumpClosed       // the closed period whose frozen entries may follow
	line0   int               // its line
	frozen  map[string]bool   // the members of its entries so far
	rank    uint32            // the last frozen rank read
}

// dumpSpan is a period of a calendar window, by its window and start.
type dumpSpan struct {
	window string
	start  int64
}

const (
	spanOpen byte = 1 + iota
	spanClosed
)

// NewDumpReader reads a dump's header from r and checks its version.
func NewDumpReader(r io.Reader) (*DumpReader, error) {
	d := &DumpReader{r: bufio.NewReaderSize(r, 1<<16), hash: sha256.New(), boards: make(map[string]bool)}
	line, err := d.readLine()
	d.hash.Write(line)
	var h struct {
		Version *int `json:"laurel_dump"`
	}
	if err != nil || decodeLine(line, &h) != nil || h.Version == nil {
		return nil, Errorf(EInvalid, "not a laurel dump: the first line must be {\"laurel_dump\": %d}", DumpVersion)
	}
	if *h.Version > DumpVersion {
		return nil, Errorf(EInvalid, "dump version %d: this laurel reads versions %d to %d; a newer laurel wrote it: import it with that version or a later one", *h.Version, oldestDumpVersion, DumpVersion)
	}
	if *h.Version < oldestDumpVersion {
		return nil, Errorf(EInvalid, "dump version %d: this laurel reads versions %d to %d (export it again with this laurel's version)", *h.Version, oldestDumpVersion, DumpVersion)
	}
	d.version = *h.Version
	return d, nil
}

// readLine reads the next line, newline included; io.EOF at the end of the input, and
// EInvalid for a last line cut short.
func (d *DumpReader) readLine() ([]byte, error) {
	line, err := d.r.ReadBytes('\n')
	switch {
	case err == io.EOF && len(line) == 0:
		return nil, io.EOF
	case err == io.EOF:
		return nil, DumpError(d.line+1, "the dump ends in the middle of a line: it is truncated")
	case err != nil:
		return nil, err
	}
	d.line++
	return line, nil
}

// decodeLine decodes one line of JSON into v, strictly: no unknown field, nothing after it.
func decodeLine(line []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("unexpected data after the record")
	}
	return nil
}

// Next returns the next record; io.EOF once the trailer has been read and the dump found
// whole. A record that is not valid in its place is EInvalid, naming its line; so is a dump
// without its trailer, or whose trailer does not match what came before it.
func (d *DumpReader) Next() (DumpRecord, error) {
	var r DumpRecord
	if d.done {
		return r, io.EOF
	}
	sum := d.hash.Sum(nil) // of everything before this line
	line, err := d.readLine()
	if err == io.EOF {
		return r, Errorf(EInvalid, "the dump ends after line %d without its trailer: it is truncated", d.line)
	}
	if err != nil {
		return r, err
	}
	d.hash.Write(line)
	if err := decodeLine(line, &r); err != nil {
		return r, DumpError(d.line, "%v", err)
	}
	if r.End != nil {
		return r, d.end(line, r, sum)
	}
	d.n++
	if r.Frozen == nil {
		if err := d.endClosed(); err != nil {
			return r, err
		}
	}
	if err := d.check(&r); err != nil {
		return r, DumpError(d.line, "%s", ErrorMessage(err))
	}
	return r, nil
}

// end checks the trailer r, read from line, against the sum of what came before it, and that
// nothing follows. The line must be the trailer exactly as DumpWriter writes it: JSON would
// take "Records" for "records", and a changed byte must never pass.
func (d *DumpReader) end(line []byte, r DumpRecord, sum []byte) error {
	if err := d.endClosed(); err != nil {
		return err
	}
	if r.Profile != nil || r.Hidden != nil || r.Board != nil || r.Event != nil || r.Agg != nil || r.Closed != nil || r.Frozen != nil || r.History != nil {
		return DumpError(d.line, "the trailer holds nothing but \"end\"")
	}
	if r.End.Records != d.n {
		return DumpError(d.line, "the trailer counts %d records, the dump holds %d: records are missing or added", r.End.Records, d.n)
	}
	if r.End.SHA256 != hex.EncodeToString(sum) {
		return DumpError(d.line, "the dump's checksum does not match its trailer: it was damaged or edited")
	}
	if want, err := json.Marshal(DumpRecord{End: r.End}); err != nil || !bytes.Equal(line, append(want, '\n')) {
		return DumpError(d.line, "the trailer is not written as laurel writes it: it was edited")
	}
	if _, err := d.readLine(); err != io.EOF {
		return DumpError(d.line+1, "data after the trailer")
	}
	d.done = true
	return io.EOF
}

// VerifyDump reads a whole dump and checks it — every record in its place, the count and
// checksum of its trailer — and returns the ids of its boards, in the order it holds them.
func VerifyDump(r io.Reader) (boards []string, err error) {
	d, err := NewDumpReader(r)
	if err != nil {
		return nil, err
	}
	for {
		rec, err := d.Next()
		if err == io.EOF {
			return boards, nil
		} else if err != nil {
			return nil, err
		}
		if rec.Board != nil {
			boards = append(boards, rec.Board.ID)
		}
	}
}

// Board is the board whose records are being read: the last board record's, applied.
func (d *DumpReader) Board() *Board { return d.board }

// Done reports whether the whole dump has been read, its trailer checked: before, an import
// has stored nothing that it commits at the end.
func (d *DumpReader) Done() bool { return d.done }

// Line is the line of the last record read, for messages.
func (d *DumpReader) Line() int { return d.line }

func (d *DumpReader) check(r *DumpRecord) error {
	n := 0
	for _, set := range []bool{r.Profile != nil, r.Hidden != nil, r.Board != nil, r.Event != nil, r.Agg != nil, r.Closed != nil, r.Frozen != nil, r.History != nil, r.Record != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return Errorf(EInvalid, "want exactly one of profile, hidden, record, board, event, agg, closed, frozen, history; it has %d", n)
	}
	member := func(m string) error {
		if err := ValidateMember("member", m); err != nil {
			return Errorf(EInvalid, "member %q: %s", m, ErrorMessage(err))
		}
		return nil
	}
	// window returns the board's window of a record, checking the record is the board's.
	window := func(board, name string) (Window, error) {
		if d.board == nil || board != d.board.ID {
			return Window{}, Errorf(EInvalid, "a record of board %q must follow that board's record", board)
		}
		if name == "" {
			return Window{}, nil
		}
		w, ok := d.board.Window(name)
		if !ok {
			return Window{}, Errorf(EInvalid, "board %q has no window %q", board, name)
		}
		return w, nil
	}
	cal := func() Calendar { return d.board.Calendar() }
	// span notes a calendar period as open or closed, refusing one that is both.
	span := func(w Window, start int64, kind byte) error {
		if !w.IsCalendar() {
			return nil
		}
		k := dumpSpan{w.String(), start}
		switch was := d.spans[k]; {
		case was == spanClosed && kind == spanClosed:
			return Errorf(EInvalid, "window %s: the period starting at %d is closed twice", k.window, start)
		case was != 0 && was != kind:
			return Errorf(EInvalid, "window %s: the period starting at %d is both closed and open (with aggregates)", k.window, start)
		}
		d.spans[k] = kind
		return nil
	}

	switch {
	case r.Record != nil:
		if d.version < 3 {
			return Errorf(EInvalid, "a version-%d dump holds no records", d.version)
		}
		if d.board != nil {
			return Errorf(EInvalid, "records come before the first board")
		}
		if ValidateRecordKey(r.Record.Kind) != nil || ValidateRecordKey(r.Record.Key) != nil {
			return Errorf(EInvalid, "a record's kind and key must be 1 to %d bytes of UTF-8 without a NUL", MaxRecordKey)
		}
		if r.Record.Value == nil {
			r.Record.Value = []byte{}
		}
	case r.Profile != nil:
		if d.board != nil {
			return Errorf(EInvalid, "profiles come before the first board")
		}
		if err := ValidateName("name", r.Profile.Name); err != nil {
			return err
		}
		if r.Profile.Metadata != nil {
			m, err := ValidateMetadata("metadata", r.Profile.Metadata, MaxMemberMetadata)
			if err != nil {
				return err
			}
			r.Profile.Metadata = m
		}
		return member(r.Profile.Member)
	case r.Hidden != nil:
		if d.board != nil {
			return Errorf(EInvalid, "hidden marks come before the first board")
		}
		return member(*r.Hidden)
	case r.Board != nil:
		b, err := r.Board.Config.Apply(r.Board.ID, nil, r.Board.CreatedAt)
		if err != nil {
			return Errorf(EInvalid, "board %q: %s", r.Board.ID, err)
		}
		if d.boards[b.ID] {
			return Errorf(EInvalid, "board %q comes twice", b.ID)
		}
		for name := range r.Board.Marks {
			if w, ok := b.Window(name); !ok || !w.IsCalendar() {
				return Errorf(EInvalid, "board %q: marks of %q, which is not one of its calendar windows", b.ID, name)
			}
		}
		d.boards[b.ID] = true
		d.board, d.lastSeq, d.spans = &b, 0, make(map[dumpSpan]byte)
		return nil
	case r.Event != nil:
		ev := r.Event
		if _, err := window(ev.Board, ""); err != nil {
			return err
		}
		if ev.Seq <= d.lastSeq {
			return Errorf(EInvalid, "event seq %d after %d: a board's events come in arrival order", ev.Seq, d.lastSeq)
		}
		d.lastSeq = ev.Seq
		if err := ValidateEventID("id", ev.ID); err != nil {
			return err
		}
		if ev.Tag != nil && d.version < 4 {
			return Errorf(EInvalid, "a version-%d dump holds no tags", d.version)
		}
		tag, err := NormalizeTag("tag", ev.Tag)
		if err != nil {
			return err
		}
		ev.Tag = tag
		if err := d.checkSub(ev.Sub); err != nil {
			return err
		}
		return member(ev.Member)
	case r.Agg != nil:
		a := r.Agg
		w, err := window(a.Board, a.Window)
		if err != nil {
			return err
		}
		switch {
		case w.Kind == WindowAll:
			if a.Start != 0 {
				return Errorf(EInvalid, "an aggregate of window all starts at 0")
			}
		case w.IsCalendar():
			if cal().PeriodAt(w, time.UnixMilli(a.Start)).Start.UnixMilli() != a.Start {
				return Errorf(EInvalid, "%d is not the start of a period of window %s", a.Start, a.Window)
			}
		default:
			if s, _ := cal().Bucket(w, time.UnixMilli(a.Start)); s.UnixMilli() != a.Start {
				return Errorf(EInvalid, "%d is not the start of a bucket of window %s", a.Start, a.Window)
			}
		}
		if err := span(w, a.Start, spanOpen); err != nil {
			return err
		}
		if err := d.checkSub(a.Sub); err != nil {
			return err
		}
		return member(a.Member)
	case r.Closed != nil:
		c := r.Closed
		w, err := window(c.Board, c.Window)
		if err != nil {
			return err
		}
		if !w.IsCalendar() {
			return Errorf(EInvalid, "window %s has no periods to close", c.Window)
		}
		p := cal().PeriodAt(w, time.UnixMilli(c.Start))
		if p.Start.UnixMilli() != c.Start || p.End.UnixMilli() != c.End || p.ID != c.ID {
			return Errorf(EInvalid, "closed period %q [%d, %d) is not a period of window %s", c.ID, c.Start, c.End, c.Window)
		}
		if c.Total < 0 || c.Total > math.MaxUint32 {
			return Errorf(EInvalid, "closed period %q of window %s: total %d out of range", c.ID, c.Window, c.Total)
		}
		for i, rk := range c.Removed {
			if rk < 1 || int(rk) > c.Total || i > 0 && rk <= c.Removed[i-1] {
				return Errorf(EInvalid, "removed ranks must be increasing, from 1 to the total %d", c.Total)
			}
		}
		if err := span(w, c.Start, spanClosed); err != nil {
			return err
		}
		d.closed, d.line0, d.frozen, d.rank = c, d.line, make(map[string]bool), 0
		return nil
	case r.Frozen != nil:
		f := r.Frozen
		if _, err := window(f.Board, f.Window); err != nil {
			return err
		}
		c := d.closed
		if c == nil || c.Window != f.Window || c.Start != f.Start {
			return Errorf(EInvalid, "a frozen entry must follow its closed period or another of its entries")
		}
		if f.Rank <= d.rank || int(f.Rank) > c.Total || slices.Contains(c.Removed, f.Rank) {
			return Errorf(EInvalid, "frozen rank %d: ranks come in order, up to the total %d, and not those removed", f.Rank, c.Total)
		}
		if d.frozen[f.Member] {
			return Errorf(EInvalid, "member %q comes twice in closed period %q of window %s", f.Member, c.ID, f.Window)
		}
		d.rank, d.frozen[f.Member] = f.Rank, true
		if err := d.checkSub(f.Sub); err != nil {
			return err
		}
		return member(f.Member)
	case r.History != nil:
		h := r.History
		if _, err := window(h.Board, ""); err != nil {
			return err
		}
		for name, p := range h.Points {
			if _, err := window(h.Board, name); err != nil {
				return err
			}
			if p[1] < 1 || p[1] > math.MaxUint32 {
				return Errorf(EInvalid, "history of member %q: rank %d in window %s", h.Member, p[1], name)
			}
		}
		for name, sub := range h.Subs {
			if _, ok := h.Points[name]; !ok {
				return Errorf(EInvalid, "history of member %q: a subscore in window %s, which has no point", h.Member, name)
			}
			if err := d.checkSub(sub); err != nil {
				return err
			}
		}
		return member(h.Member)
	}
	return nil
}

// checkSub checks a subscore of the current board's: only a version-5 dump holds them, and
// only for a board that has a subscore.
func (d *DumpReader) checkSub(sub int64) error {
	switch {
	case sub == 0:
		return nil
	case d.version < 5:
		return Errorf(EInvalid, "a version-%d dump holds no subscores", d.version)
	case d.board == nil || d.board.Subscore == nil:
		return Errorf(EInvalid, "a subscore on a board without one")
	}
	return nil
}

// endClosed checks that the closed period whose entries were being read had them all.
func (d *DumpReader) endClosed() error {
	c := d.closed
	d.closed = nil
	if c == nil || len(d.frozen)+len(c.Removed) == c.Total {
		return nil
	}
	return DumpError(d.line0, "closed period %q of window %s has %d entries and %d removed ranks, but a total of %d",
		c.ID, c.Window, len(d.frozen), len(c.Removed), c.Total)
}

// DumpError names the record of a dump that an import refused.
func DumpError(line int, format string, args ...any) error {
	return Errorf(EInvalid, "dump record %d: %s", line, fmt.Sprintf(format, args...))
}

// Records is how many records were read, the trailer left out.
func (d *DumpReader) Records() int64 { return d.n }
