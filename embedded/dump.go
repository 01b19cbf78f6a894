package embedded

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/laurel/laurel"
)

// A dump (the root package's dump.go) is the store's records in the API's words: Export
// reads them from one snapshot, Import writes them back into an empty store as the store
// would have, and Open recovers that store as after a restart.

var _ laurel.Exporter = (*Store)(nil)

// Export writes everything the store holds as a dump, from one snapshot of it. Writes go on
// meanwhile; Close stops the export at its next record.
func (s *Store) Export(ctx context.Context, w *laurel.DumpWriter) error {
	// The writer takes the snapshot right after a commit of its own that holds the history
	// points still waiting for one and every aggregate not stored yet: no batch is then in
	// flight (Pebble shows a batch before its fsync returns), every event in the snapshot has
	// its point, and every aggregate is as memory holds it.
	var snap, logSnap *pebble.Snapshot
	var recent *recentEvents
	var spans []spanCopy
	err := s.do(ctx, &op{
		exclusive: true,
		run: func(tx *txn) error {
			s.stageHistory(tx)
			s.checkpoint(tx, true)
			return nil
		},
		finish: func() {
			snap, logSnap = s.db.NewSnapshot(), s.logDB.NewSnapshot()
			recent = s.recent.clone()
			spans = s.copySpans()
			s.exports.Add(1)
			s.exporting.Add(1)
		},
	})
	if snap != nil {
		defer func() {
			snap.Close()
			logSnap.Close()
			s.exporting.Add(-1)
			s.exports.Done()
		}()
	}
	if err != nil {
		return err
	}
	x := &exporter{stop: s.stop, r: snap, recent: recent, points: newLogPoints(logSnap), spans: spans, w: w}
	if err := x.run(ctx); err != nil {
		return fmt.Errorf("embedded: export: %w", err)
	}
	return nil
}

type exporter struct {
	stop   <-chan struct{}
	r      pebble.Reader
	recent *recentEvents // the events since the last seal, as of r
	points *logPoints    // their history points, from the log as of r
	spans  []spanCopy    // the aggregates of open periods and all, as of r: memory holds them (cpfile.go)
	w      *laurel.DumpWriter
}

// write adds a record, unless the export was cancelled or the store is closing.
func (x *exporter) write(ctx context.Context, rec laurel.DumpRecord) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case <-x.stop:
		return errClosed
	default:
	}
	return x.w.Write(rec)
}

func (x *exporter) run(ctx context.Context) error {
	err := scanPrefix(x.r, []byte{tagProfile}, func(k, v []byte) error {
		var p profile
		if err := json.Unmarshal(v, &p); err != nil {
			return err
		}
		return x.write(ctx, laurel.DumpRecord{Profile: &laurel.DumpProfile{Member: string(k[1:]), Name: p.Name, Metadata: p.Metadata}})
	})
	if err != nil {
		return err
	}
	err = scanPrefix(x.r, []byte{tagHidden}, func(k, _ []byte) error {
		m := string(k[1:])
		return x.write(ctx, laurel.DumpRecord{Hidden: &m})
	})
	if err != nil {
		return err
	}
	err = scanPrefix(x.r, []byte{tagRecord}, func(k, v []byte) error {
		kind, key, ok := bytes.Cut(k[1:], []byte{0})
		if !ok {
			return errCorrupt
		}
		return x.write(ctx, laurel.DumpRecord{Record: &laurel.DumpRec{Kind: string(kind), Key: string(key), Value: bytes.Clone(v)}})
	})
	if err != nil {
		return err
	}
	var boards []laurel.Board // by id: the keys' order
	err = scanPrefix(x.r, []byte{tagBoard}, func(k, v []byte) error {
		cfg, err := decodeBoard(string(k[1:]), v)
		boards = append(boards, cfg)
		return err
	})
	if err != nil {
		return err
	}
	for i := range boards {
		if err := x.board(ctx, &boards[i]); err != nil {
			return fmt.Errorf("board %s: %w", boards[i].ID, err)
		}
	}
	return nil
}

// aggregates writes the aggregates of a window's open spans (or a rolling window's buckets),
// each span's by member.
func (x *exporter) aggregates(ctx context.Context, id string, w laurel.Window) error {
	name := w.String()
	write := func(start int64, member string, a aggregate) error {
		return x.write(ctx, laurel.DumpRecord{Agg: &laurel.DumpAgg{
			Board: id, Window: name, Start: start, Member: member, Score: a.score, Sub: a.sub, At: a.at,
		}})
	}
	if !w.IsRolling() {
		type entry struct {
			member string
			a      aggregate
		}
		for _, sc := range x.spans {
			if sc.board != id || sc.window != name {
				continue
			}
			entries := make([]entry, 0, sc.slots.n)
			sc.slots.each(func(h uint32, v slot) { entries = append(entries, entry{sc.names.name(h), aggregate(v)}) })
			slices.SortFunc(entries, func(a, b entry) int { return cmp.Compare(a.member, b.member) })
			for _, en := range entries {
				if err := write(sc.start, en.member, en.a); err != nil {
					return err
				}
			}
		}
		return nil
	}
	p := prefix(tagAgg, id, name)
	return scanPrefix(x.r, p, func(k, v []byte) error {
		a, err := decodeAgg(v)
		if err != nil || len(k) < len(p)+8 {
			return errCorrupt
		}
		return write(readTime(k[len(p):]), string(k[len(p)+8:]), a)
	})
}

// board writes a board's records: the board, its events by seq, the aggregates of its open
// spans, its closed periods oldest first each with its entries by rank, and its history by
// member and seq.
func (x *exporter) board(ctx context.Context, cfg *laurel.Board) error {
	id := cfg.ID
	rec := &laurel.DumpBoard{ID: id, Config: cfg.Spec(), CreatedAt: cfg.CreatedAt}
	for _, w := range cfg.Windows {
		v, ok, err := get(x.r, key(tagWindow, id, w.String()))
		if err != nil {
			return err
		}
		if !ok || len(v) != 16 {
			continue
		}
		if m := (laurel.Marks{ClosedThrough: readTime(v), DroppedBefore: readTime(v[8:])}); m != laurel.NoMarks {
			if rec.Marks == nil {
				rec.Marks = make(map[string]laurel.Marks)
			}
			rec.Marks[w.String()] = m
		}
	}
	if err := x.write(ctx, laurel.DumpRecord{Board: rec}); err != nil {
		return err
	}
	if err := x.events(ctx, id); err != nil {
		return err
	}
	for _, w := range cfg.Windows {
		if err := x.aggregates(ctx, id, w); err != nil {
			return err
		}
	}
	for _, w := range cfg.Windows {
		if w.IsCalendar() {
			if err := x.closed(ctx, id, w.String(), cfg.Subscore != nil); err != nil {
				return err
			}
		}
	}
	return eachMemberEvents(x.r, x.recent, x.points, id, false, func(member string, events []storedEvent) error {
		for _, ev := range events {
			if ev.point == nil {
				continue
			}
			ts, points, subs, err := decodePoints(ev.point)
			if err != nil {
				return err
			}
			err = x.write(ctx, laurel.DumpRecord{History: &laurel.DumpHistory{Board: id, Member: member, Seq: ev.seq, TS: ts, Points: points, Subs: subs}})
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// events writes a board's events in arrival order, gathered by member and sorted by seq.
func (x *exporter) events(ctx context.Context, id string) error {
	var events []storedEvent
	err := eachMemberEvents(x.r, x.recent, nil, id, true, func(_ string, evs []storedEvent) error {
		events = append(events, evs...)
		return nil
	})
	if err != nil {
		return err
	}
	slices.SortFunc(events, func(a, b storedEvent) int { return cmp.Compare(a.seq, b.seq) })
	for _, ev := range events {
		err := x.write(ctx, laurel.DumpRecord{Event: &laurel.DumpEvent{
			Board: id, Seq: ev.seq, Member: ev.member, Value: ev.value, Sub: ev.sub, TS: ev.ts, ID: ev.id, Retracted: ev.flags&flagRetracted != 0, Tag: tagJSON(ev.tag),
		}})
		if err != nil {
			return err
		}
	}
	return nil
}

// closed writes a calendar window's closed periods, oldest first, each followed by its
// entries by rank; sub: the board has a subscore.
func (x *exporter) closed(ctx context.Context, id, window string, sub bool) error {
	var closed []*closedPeriod
	p := prefix(tagClosed, id, window)
	err := scanPrefix(x.r, p, func(k, v []byte) error {
		if len(k) != len(p)+8 {
			return errCorrupt
		}
		cp, err := decodeClosed(readTime(k[len(p):]), v)
		closed = append(closed, cp)
		return err
	})
	if err != nil {
		return err
	}
	for _, cp := range closed {
		err := x.write(ctx, laurel.DumpRecord{Closed: &laurel.DumpClosed{
			Board: id, Window: window, ID: cp.id, Start: cp.start, End: cp.end, Total: int(cp.total), Removed: cp.removed,
		}})
		if err != nil {
			return err
		}
		rp := spanPrefix(tagRank, id, window, cp.start)
		err = scanPrefix(x.r, rp, func(k, v []byte) error {
			if len(k) != len(rp)+4 {
				return errCorrupt
			}
			f, err := decodeFrozen(binary.BigEndian.Uint32(k[len(rp):]), v, sub)
			if err != nil {
				return err
			}
			return x.write(ctx, laurel.DumpRecord{Frozen: &laurel.DumpFrozen{
				Board: id, Window: window, Start: cp.start, Rank: f.rank, Member: f.member, Score: f.agg.score, Sub: f.agg.sub, At: f.agg.at,
			}})
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// errUnfinishedImport is Open's answer on a store that an import was still writing when it
// stopped.
var errUnfinishedImport = errors.New("an import into this store did not finish: import again into an empty directory")

// importBatch is how many records an import commits at once.
const importBatch = 10_000

// Import loads a dump into the store in dir, which must hold nothing yet (a missing directory
// is created). It writes what the store itself would have written; Open then recovers the
// store as after a restart, closing the periods that came due since the export. The reader
// checks each record in its place; Import checks what needs the events it stored (an event id
// used twice, history points of their members' events). A dump it refuses leaves the store
// empty (and no directory it made), and an import cut short by a crash leaves it marked for
// Open to refuse.
func Import(dir string, r *laurel.DumpReader, opts Options) error {
	opts = opts.withDefaults()
	_, statErr := opts.FS.Stat(dir)
	made := errors.Is(statErr, os.ErrNotExist) // a refused import takes away the directory it made
	db, _, err := openStore(dir, opts, storeOpenFiles(opts.MaxOpenFiles))
	if err != nil {
		return heldError(opts.FS, dir, err) // in use by a server, say so
	}
	in := &importer{db: db, r: r, dir: dir, fs: opts.FS, reserve: opts.MinFreeDisk}
	if err := in.checkEmpty(dir); err != nil {
		db.Close()
		return err
	}
	err = in.run()
	if err != nil {
		if in.batch != nil {
			in.batch.Close()
		}
		// Empty again, so that the next attempt is not refused.
		if derr := db.DeleteRange([]byte{0}, []byte{0xff}, pebble.Sync); derr != nil {
			opts.Logger.Error("import: erasing what was imported", "dir", dir, "err", derr)
		}
	}
	if cerr := db.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil && made {
		if rerr := opts.FS.RemoveAll(dir); rerr != nil {
			opts.Logger.Error("import: removing the directory it made", "dir", dir, "err", rerr)
		}
	}
	if err != nil && laurel.ErrorCode(err) == laurel.EInternal {
		err = fmt.Errorf("embedded: import into %s: %w", dir, err)
	}
	return err
}

// importer writes a dump's records into a store.
type importer struct {
	db  *pebble.DB
	r   *laurel.DumpReader
	dir string
	fs  vfs.FS
	// reserve is the free space (bytes) below which a batch is not committed (Pebble, out of
	// space for its log, panics): as a server keeps, so that it can serve what was imported.
	// Below zero: none.
	reserve int64
	batch   *pebble.Batch // indexed: event ids are looked up in it
	n       int           // records in batch
	seq     uint64        // the largest event seq: the store's sequence record

	board   *laurel.Board // the board whose records are read
	windows []string      // its windows' names, in order
}

// checkEmpty refuses a store that holds anything but the sequence record and the log (which
// boards deleted since leave), and keeps the sequence from going back.
func (in *importer) checkEmpty(dir string) error {
	it, err := in.db.NewIter(nil)
	if err != nil {
		return err
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		switch k := it.Key(); {
		case len(k) == 1 && k[0] == tagSeq && len(it.Value()) == 8:
			in.seq = readU64(it.Value())
		case len(k) == 1 && k[0] == tagImport:
			return laurel.Errorf(laurel.EConflict, "%s: %s", dir, errUnfinishedImport)
		case len(k) == 1 && (k[0] == tagReplay || k[0] == tagSealedTo || k[0] == tagBucketsAsOf):
			// Where replay started and what was sealed, of boards deleted since: nothing to
			// recover (the import writes them anew).
		default:
			return laurel.Errorf(laurel.EConflict, "the store in %s is not empty: import into a new or empty directory", dir)
		}
	}
	return it.Error()
}

func (in *importer) run() error {
	if err := in.room(); err != nil {
		return err
	}
	in.batch = in.db.NewIndexedBatch()
	in.set([]byte{tagImport}, nil)
	for _, k := range []byte{tagReplay, tagBucketsAsOf} {
		if err := in.batch.Delete([]byte{k}, nil); err != nil {
			return err
		}
	}
	for {
		rec, err := in.r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if err := in.add(rec); err != nil {
			return err
		}
		if in.n >= importBatch {
			// Synced, one fsync per batch: a batch committed without one may sit in Pebble's
			// log writer, not in the file, until a later write pushes it (TestImportCutShort
			// waited 60 s for one, 2 runs in 400).
			if err := in.room(); err != nil {
				return err
			}
			if err := in.batch.Commit(pebble.Sync); err != nil {
				return err
			}
			in.batch.Close()
			in.batch, in.n = in.db.NewIndexedBatch(), 0
		}
	}
	if in.seq > 0 {
		// Every event imported is sealed, and counted in the aggregates imported: the log,
		// and replay, start after them.
		in.set([]byte{tagSeq}, appendU64(nil, in.seq))
		in.set([]byte{tagSealedTo}, appendU64(nil, in.seq))
		in.set([]byte{tagReplay}, appendU64(nil, in.seq+1))
	}
	if err := in.batch.Delete([]byte{tagImport}, nil); err != nil {
		return err
	}
	if err := in.room(); err != nil {
		return err
	}
	// The write-ahead log keeps batches in order: this one durable, all are.
	return in.batch.Commit(pebble.Sync)
}

// room refuses to go on when the disk has less free space than the reserve.
func (in *importer) room() error {
	if in.reserve < 0 {
		return nil
	}
	u, err := in.fs.GetDiskUsage(in.dir)
	if err != nil || u.AvailBytes >= uint64(in.reserve) {
		return nil // a file system that cannot tell (in memory) has room
	}
	return laurel.Errorf(laurel.EUnavailable, "the disk holding %s is nearly full (%d MiB free, %d MiB kept in reserve for the store to flush): nothing was imported; free space, then import again", in.dir, u.AvailBytes>>20, in.reserve>>20)
}

func (in *importer) set(k, v []byte) {
	if err := in.batch.Set(k, v, nil); err != nil {
		panic("embedded: batch set: " + err.Error())
	}
	in.n++
}

// add writes one record as the store stores it.
func (in *importer) add(rec laurel.DumpRecord) error {
	switch {
	case rec.Profile != nil:
		p := rec.Profile
		v, err := json.Marshal(&profile{Name: p.Name, Metadata: p.Metadata})
		if err != nil {
			return err
		}
		in.set(key(tagProfile, p.Member), v)
	case rec.Hidden != nil:
		in.set(key(tagHidden, *rec.Hidden), nil)
	case rec.Record != nil:
		in.set(recordKey(rec.Record.Kind, rec.Record.Key), rec.Record.Value)
	case rec.Board != nil:
		b := in.r.Board()
		in.board, in.windows = b, nil
		for _, w := range b.Windows {
			in.windows = append(in.windows, w.String())
		}
		in.set(key(tagBoard, b.ID), encodeBoard(b))
		for name, m := range rec.Board.Marks {
			in.set(key(tagWindow, b.ID, name), appendTime(appendTime(nil, m.ClosedThrough), m.DroppedBefore))
		}
	case rec.Event != nil:
		if rec.Event.Tag != nil {
			in.set(taggedKey(rec.Event.Board), nil)
		}
		return in.event(rec.Event)
	case rec.Agg != nil:
		a := rec.Agg
		in.set(aggKey(a.Board, a.Window, a.Start, a.Member), encodeAgg(aggregate{score: a.Score, at: a.At, sub: a.Sub}))
	case rec.Closed != nil:
		c := rec.Closed // its total fits a uint32: the reader checked it
		cp := &closedPeriod{id: c.ID, start: c.Start, end: c.End, total: uint32(c.Total)}
		in.set(closedKey(c.Board, c.Window, c.Start), encodeClosed(cp, c.Removed))
	case rec.Frozen != nil:
		f := rec.Frozen
		in.set(rankKey(f.Board, f.Window, f.Start, f.Rank), encodeFrozen(frozen{rank: f.Rank, member: f.Member, agg: aggregate{score: f.Score, at: f.At, sub: f.Sub}}, in.board.Subscore != nil))
		in.set(frozenMemberKey(f.Board, f.Window, f.Start, f.Member), binary.BigEndian.AppendUint32(nil, f.Rank))
	case rec.History != nil:
		return in.history(rec.History)
	}
	return nil
}

// event writes an event, sealed, with its member index and, while it counts, its id's
// record (an id names one counted event of a board at a time) or else its retraction.
func (in *importer) event(de *laurel.DumpEvent) error {
	ev := event{member: de.Member, seq: de.Seq, value: de.Value, ts: de.TS, id: de.ID, tag: string(de.Tag), sub: de.Sub}
	// Every event by its time, so that a board whose later events carry tags finds any of
	// them (tags.go).
	in.set(appendByTimeKey(nil, de.Board, de.Member, de.TS, de.Seq), nil)
	switch {
	case de.Retracted:
		ev.flags |= flagRetracted
		in.set(retractKey(de.Board, ev.seq), nil)
	case ev.id != "":
		k := key(tagID, de.Board, ev.id)
		_, dup, err := get(in.batch, k)
		if err != nil {
			return err
		}
		if dup {
			return laurel.DumpError(in.r.Line(), "event id %q is the id of an earlier event of board %q that is not retracted", ev.id, de.Board)
		}
		in.set(k, ev.encodeID())
	}
	in.set(sealedKey(ev.seq, de.Board), sealedValue(de.Board, &ev, nil))
	in.set(eventsKey(de.Board, ev.member, ev.seq), nil)
	in.seq = max(in.seq, ev.seq)
	return nil
}

// history writes a history record, its windows in the board's order.
func (in *importer) history(h *laurel.DumpHistory) error {
	names := make([]string, 0, len(h.Points))
	standings := make([]laurel.Standing, 0, len(h.Points))
	for _, name := range in.windows {
		p, ok := h.Points[name] // its rank fits a uint32: the reader checked it
		if !ok {
			continue
		}
		names = append(names, name)
		standings = append(standings, laurel.Standing{Score: p[0], Rank: int(p[1]), Sub: h.Subs[name]})
	}
	// The point goes with its event, which came before it.
	v, ok, err := get(in.batch, sealedKey(h.Seq, h.Board))
	if err != nil {
		return err
	}
	if board, ev, point, err := decodeSealed(h.Seq, v); !ok || err != nil || board != h.Board || ev.member != h.Member || point != nil {
		return laurel.DumpError(in.r.Line(), "history of member %q: no event %d of board %q of that member, or it has a point already", h.Member, h.Seq, h.Board)
	}
	in.set(sealedKey(h.Seq, h.Board), append(v, encodeHistory(h.TS, names, standings)...))
	return nil
}
