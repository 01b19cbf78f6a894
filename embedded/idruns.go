package embedded

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// The ids of sealed events live in runs of our own, not in one table that Pebble compacts.
//
// Event ids are the client's, so every seal's ids fall among all the earlier seals' ids: kept
// under one key prefix (I board id), each seal's file would land in level 0 and each
// compaction of level 0 would rewrite every id stored so far with it: measured over five
// minutes of ingest, two thirds of Pebble's compactions (docs/benchmarks-log.md, "The ids in
// runs of their own").
//
// So each seal writes its ids under a prefix of their own, the run's: the first and last
// sequence numbers it seals and its tier (0). Its keys fall among no other file's, so Pebble
// puts the file in its last level and never compacts it. When Options.IDRunFanout runs of
// one tier follow one another, a goroutine merges them into one run of the next tier, which
// the writer puts in their place with one atomic ingestion that excises them
// (finishIDMerge): an id is written once a tier, as in a tiered LSM, and there are at most
// IDRunFanout-1 runs a tier. A lookup that the id filter lets through (about one new id in a
// hundred, and the retries) reads each run, newest first: a seek in its table.
//
//	Y first last tier board 0 id → the event's seq
//
// Ids that an import or an earlier version stored are under I, and read there as before.

// idRunPrefixLen is the length of a run's key prefix: the tag, first, last and tier.
const idRunPrefixLen = 1 + 8 + 8 + 1

// idRun is a run of ids: those of the sealed events with first ≤ seq ≤ last, less the
// retracted and erased ones.
type idRun struct {
	first, last uint64
	tier        uint8
}

func (r idRun) prefix() []byte { return r.appendPrefix(make([]byte, 0, idRunPrefixLen)) }

func (r idRun) appendPrefix(b []byte) []byte {
	return append(appendU64(appendU64(append(b, tagIDRun), r.first), r.last), r.tier)
}

// appendKey appends the key of board's id in the run to b.
func (r idRun) appendKey(b []byte, board, id string) []byte {
	b = append(r.appendPrefix(b), board...)
	return append(append(b, 0), id...)
}

// span is the run's key range.
func (r idRun) span() pebble.KeyRange {
	p := r.prefix()
	return pebble.KeyRange{Start: p, End: upper(p)}
}

func (r idRun) covers(seq uint64) bool { return r.first <= seq && seq <= r.last }

// readIDRun reads the run of a key of the table.
func readIDRun(k []byte) (idRun, error) {
	if len(k) < idRunPrefixLen || k[0] != tagIDRun {
		return idRun{}, fmt.Errorf("embedded: id run key %q: %w", k, errCorrupt)
	}
	return idRun{first: readU64(k[1:9]), last: readU64(k[9:17]), tier: k[17]}, nil
}

// idKeyOfRun returns the I key of a run's key, appended to b: what the id filter knows.
func idKeyOfRun(b, k []byte) []byte { return append(append(b, tagID), k[idRunPrefixLen:]...) }

// loadIDRuns lists the runs the store holds, one seek each, and excises those past the last
// seal (a crash cut it short after its files were ingested: its events are in the log, and
// the next seal writes them again).
func (s *Store) loadIDRuns() error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{tagIDRun}, UpperBound: []byte{tagIDRun + 1}})
	if err != nil {
		return err
	}
	var runs []idRun
	for valid := it.First(); valid; valid = it.SeekGE(runs[len(runs)-1].span().End) {
		r, err := readIDRun(it.Key())
		if err != nil {
			it.Close()
			return err
		}
		runs = append(runs, r)
	}
	if err := cmp.Or(it.Error(), it.Close()); err != nil {
		return err
	}
	for len(runs) > 0 && runs[len(runs)-1].last > s.sealedTo {
		if err := s.db.Excise(context.Background(), runs[len(runs)-1].span()); err != nil {
			return err
		}
		runs = runs[:len(runs)-1]
	}
	s.idRuns = runs
	return nil
}

// idRun is the run of the ids of r's events sealed through last.
func (r *recentEvents) idRun(last uint64) idRun {
	first := last
	if len(r.list) > 0 {
		first = r.list[0].seq
	}
	return idRun{first: first, last: last}
}

// storedID reads the id record of board's id among the sealed events: in the runs, newest
// first, then among those stored under I.
//
// Each run is read through a reader of its own, bounded to it, that the group keeps: one
// reader for all of them moved from one table to the next at every lookup, and built each
// table's iterator again. Not through the table's Bloom filter, which Pebble's iterators skip
// in the last level unless asked: a merged run's is one block of megabytes, which the block
// cache does not keep (docs/benchmarks-log.md, "What the lookups cost the writer"). The runs do
// not change while a group stages: seals and merges end between groups.
func (tx *txn) storedID(board, id string) ([]byte, bool, error) {
	g, runs := tx.group(), tx.e.idRuns
	if len(g.idReaders) != len(runs) { // the first lookup of the group
		g.closeIDReaders()
		g.idReaders = make([]*pointReader, len(runs))
	}
	var k []byte
	for i, r := range slices.Backward(runs) {
		if g.idReaders[i] == nil {
			sp := r.span()
			it, err := tx.e.db.NewIter(&pebble.IterOptions{LowerBound: sp.Start, UpperBound: sp.End})
			if err != nil {
				return nil, false, err
			}
			g.idReaders[i] = &pointReader{it}
		}
		k = r.appendKey(k[:0], board, id)
		if v, ok, err := g.idReaders[i].get(k); err != nil || ok {
			return v, ok, err
		}
	}
	return tx.storeGet(key(tagID, board, id))
}

// closeIDReaders closes the readers of runs that storedID made.
func (tx *txn) closeIDReaders() {
	for _, r := range tx.idReaders {
		if r != nil {
			r.close()
		}
	}
	tx.idReaders = nil
}

// delID stages the removal of the id record of board's sealed event seq: from its run, and
// from I, where an import or an earlier version may have put it. A merge of the run under
// way is then dropped: it read the record.
func (tx *txn) delID(board, id string, seq uint64) {
	e := tx.e
	i, ok := slices.BinarySearchFunc(e.idRuns, seq, func(r idRun, seq uint64) int {
		switch {
		case r.last < seq:
			return -1
		case r.first > seq:
			return 1
		}
		return 0
	})
	if ok {
		tx.del(e.idRuns[i].appendKey(nil, board, id))
		e.sealedDeletes++
	}
	tx.del(key(tagID, board, id))
}

// delBoardIDs stages the removal of a board's ids from every run.
func (tx *txn) delBoardIDs(board string) {
	for _, r := range tx.e.idRuns {
		p := append(r.appendPrefix(nil), board...)
		p = append(p, 0)
		tx.delRange(p, upper(p))
	}
	tx.e.sealedDeletes++
}

// delSealed stages the erasure of board's sealed event seq. A merge under way is then
// dropped: it read the event.
func (tx *txn) delSealed(seq uint64, board string) {
	tx.del(sealedKey(seq, board))
	tx.e.sealedDeletes++
}

// eventSpan is the key range of the sealed events of the run's sequence numbers.
func (r idRun) eventSpan() pebble.KeyRange {
	return pebble.KeyRange{Start: sealedKey(r.first, ""), End: sealedKey(r.last+1, "")}
}

// idMerge is a merge of runs in progress: written by a goroutine of its own from a snapshot,
// put in place by the writer.
type idMerge struct {
	runs       []idRun // oldest first, consecutive in the store's list
	out        idRun
	path       string // of the ids' file
	eventsPath string // of the events' file
	deletes    uint64 // the store's sealedDeletes when it began
	snap       *pebble.Snapshot
	ids        int // the records written
	events     int
	start      time.Time
	done       chan error
}

// mergeableIDRuns returns the oldest fanout consecutive runs of one tier, if any. Merging
// them keeps the list's tiers falling from the oldest run to the newest, as a counter's
// digits: the run before them is of a higher tier, else they would not be the oldest.
func mergeableIDRuns(runs []idRun, fanout int) []idRun {
	for i := 0; i+fanout <= len(runs); i++ {
		group := runs[i : i+fanout]
		if !slices.ContainsFunc(group, func(r idRun) bool { return r.tier != group[0].tier }) {
			return group
		}
	}
	return nil
}

// maybeMergeIDs starts a merge when Options.IDRunFanout runs of one tier follow one another
// and none is under way. The writer calls it once a commit is applied, so that the merge's
// snapshot holds every deletion of an id staged before (sealedDeletes counts those staged after).
func (s *Store) maybeMergeIDs() {
	if s.broken() || s.idMerging != nil || s.stopping() {
		return
	}
	runs := mergeableIDRuns(s.idRuns, s.opts.IDRunFanout)
	if runs == nil {
		return
	}
	out := idRun{first: runs[0].first, last: runs[len(runs)-1].last, tier: runs[0].tier + 1}
	m := &idMerge{
		runs: slices.Clone(runs), out: out, deletes: s.sealedDeletes, snap: s.db.NewSnapshot(), start: time.Now(), done: make(chan error, 1),
		path:       s.opts.FS.PathJoin(s.dir, fmt.Sprintf("sealing-ids-%016x-%016x.sst", out.first, out.last)),
		eventsPath: s.opts.FS.PathJoin(s.dir, fmt.Sprintf("sealing-events-%016x-%016x.sst", out.first, out.last)),
	}
	s.idMerging = m
	go func() {
		inBackground()
		err := s.writeIDMerge(m)
		if err == nil {
			err = s.writeEventsMerge(m)
		}
		// Closed before the writer hears of it: a writer stopping finishes the merge and
		// closes the store, whose check found the snapshot still open (deferred, it closed
		// after the send; once in the race detector's run of TestReplayAfterCrash).
		m.snap.Close()
		m.done <- err
	}()
}

// stopping reports whether Close has begun: the writer finishes the merge under way, and
// starts none.
func (s *Store) stopping() bool {
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
}

// idMergeDone is where the writer hears that the merge under way is written, while no export
// runs: a merge's events are put in place by an excision that the export's snapshot would not
// survive (putMergedEvents), so it waits for the export to end.
func (s *Store) idMergeDone() <-chan error {
	if s.idMerging == nil || s.exporting.Load() > 0 {
		return nil
	}
	return s.idMerging.done
}

// writeIDMerge writes the merge of m's runs to its file: their records in id order under the
// new run's prefix. Ids are unique among the records of a board (a retracted id's record goes
// before the id is used again), but should two runs hold one, the newer's is kept.
func (s *Store) writeIDMerge(m *idMerge) (err error) {
	its := make([]*pebble.Iterator, 0, len(m.runs))
	defer func() {
		for _, it := range its {
			err = cmp.Or(err, it.Close())
		}
	}()
	for _, r := range m.runs {
		sp := r.span()
		it, err := m.snap.NewIter(&pebble.IterOptions{LowerBound: sp.Start, UpperBound: sp.End})
		if err != nil {
			return err
		}
		its = append(its, it)
		it.First()
	}
	w, err := s.newTable(m.path)
	if err != nil {
		return err
	}
	k := m.out.prefix()
	for err == nil {
		best := -1
		for i, it := range its {
			if it.Valid() && (best < 0 || bytes.Compare(it.Key()[idRunPrefixLen:], its[best].Key()[idRunPrefixLen:]) <= 0) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		k = append(k[:idRunPrefixLen], its[best].Key()[idRunPrefixLen:]...)
		if err = w.Set(k, its[best].Value()); err != nil {
			break
		}
		m.ids++
		for _, it := range its {
			if it.Valid() && bytes.Equal(it.Key()[idRunPrefixLen:], k[idRunPrefixLen:]) {
				it.Next()
			}
		}
	}
	for _, it := range its {
		err = cmp.Or(err, it.Error())
	}
	return cmp.Or(err, w.Close())
}

// writeEventsMerge copies the sealed events of m's runs, in key order, to one file: each seal
// ingested its events as a table of the last level, where no compaction ever rewrites them
// (not even a manual one: Pebble's stops above the last level), so the store's tables would
// grow by one a seal for as long as it runs.
func (s *Store) writeEventsMerge(m *idMerge) (err error) {
	sp := m.out.eventSpan()
	it, err := m.snap.NewIter(&pebble.IterOptions{LowerBound: sp.Start, UpperBound: sp.End})
	if err != nil {
		return err
	}
	defer func() { err = cmp.Or(err, it.Close()) }()
	w, err := s.newTable(m.eventsPath)
	if err != nil {
		return err
	}
	for valid := it.First(); valid && err == nil; valid = it.Next() {
		err = w.Set(it.Key(), it.Value())
		m.events++
	}
	return cmp.Or(err, it.Error(), w.Close())
}

// finishIDMerge puts a merge written in place of its runs, in the writer, between groups: one
// ingestion of its file that excises their key ranges, atomic in Pebble. A merge that read a
// record deleted since is dropped and started again, from a snapshot that holds the deletion;
// one that failed (the disk may be full) is dropped, its runs staying as they are until the
// merge after the next seal.
func (s *Store) finishIDMerge(err error) {
	m := s.idMerging
	s.idMerging = nil
	if err == nil && s.sealedDeletes != m.deletes {
		s.opts.FS.Remove(m.path) // before the merge started again writes them anew
		s.opts.FS.Remove(m.eventsPath)
		s.maybeMergeIDs() // at once: the commits of those deletions are applied
		return
	}
	defer s.opts.FS.Remove(m.path)
	defer s.opts.FS.Remove(m.eventsPath)
	if err == nil {
		span := pebble.KeyRange{Start: m.runs[0].span().Start, End: m.runs[len(m.runs)-1].span().End}
		if m.ids > 0 {
			_, err = s.db.IngestAndExcise(context.Background(), []string{m.path}, nil, nil, span)
		} else {
			err = s.db.Excise(context.Background(), span)
		}
	}
	if err != nil {
		s.log.Warn("merging the ids of sealed events failed; their runs stay as they are", "runs", len(m.runs), "err", err)
		return
	}
	i := slices.Index(s.idRuns, m.runs[0])
	s.idRuns = slices.Replace(s.idRuns, i, i+len(m.runs), m.out)
	s.putMergedEvents(m)
	s.log.Debug("merged the ids and events of sealed events", "runs", len(m.runs), "ids", m.ids, "events", m.events, "tier", m.out.tier, "took", time.Since(m.start))
	s.releaseCMemory() // the cache's blocks the reads evicted
	s.maybeMergeIDs()
}

// putMergedEvents puts the events a merge wrote in place of the seals' files, by one
// ingestion that excises their key range. Excised keys are gone from every snapshot taken
// before (the file ingested comes after them), so it is done only while no export reads a
// snapshot of its own (idMergeDone; a merge finished as the store closes leaves them as they
// are, for the merge of the next tier to take), and holding the lock that readers of the
// store's snapshot hold, which it then replaces.
func (s *Store) putMergedEvents(m *idMerge) {
	if s.exporting.Load() > 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var err error
	if span := m.out.eventSpan(); m.events > 0 {
		_, err = s.db.IngestAndExcise(context.Background(), []string{m.eventsPath}, nil, nil, span)
	} else {
		err = s.db.Excise(context.Background(), span)
	}
	if s.snap != nil {
		s.snap.Close()
		s.snap = s.db.NewSnapshot()
	}
	if err != nil {
		s.log.Warn("merging sealed events failed; their files stay as they are", "runs", len(m.runs), "err", err)
	}
}
