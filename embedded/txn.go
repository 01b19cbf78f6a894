package embedded

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"github.com/laurel/laurel"
)

// txn stages the writes of a group: a Pebble batch, an overlay that later operations of the
// group read through (memory and store do not change until the group commits), and the
// changes to memory to make once it has. Each operation stages into a child txn, merged into
// the group's only if the operation succeeds. The overlay is the group's alone: an operation
// writes into it and keeps an undo log of what it replaced, which a failure plays back.
// (Each operation had an overlay of its own, copied into the group's when it succeeded: the
// copies, the second lookup of every read and the clearing of the operation's maps took
// nearly a quarter of the writer's time.)
type txn struct {
	e      *Store
	now    int64
	parent *txn
	batch  *pebble.Batch

	mem      map[memKey]memVal // aggregates in in-memory spans and rolling buckets; the group's
	ids      map[string]idVal  // the group's
	profiles map[string]*profile
	seq      uint64
	// memPeak and idsPeak are the most entries mem and ids held before this group, when
	// they were spares: what clearing them costs (spareMap).
	memPeak, idsPeak int
	// memUndo and idsUndo are an operation's undo log: what its writes replaced in the
	// group's overlay, oldest first.
	memUndo []undoEntry[memKey, memVal]
	idsUndo []undoEntry[string, idVal]

	after []change // lanes.go
	// deferAggs is set by submits: the aggregates of open periods and all that they change
	// are written later, by a checkpoint (checkpoint.go).
	deferAggs bool
	// deferredBuckets is set once the txn, or an operation merged into it, has staged a
	// bucket's aggregate to be written behind.
	deferredBuckets bool
	// breaks are the indexes in after where one operation's changes end and the next one's
	// begin: where the writer may let readers in while it applies a group.
	breaks  []int
	touched map[*board]bool
	global  bool // a change beyond single boards: a profile, a hidden mark, a deleted board
	moved   bool // one of them that may move any member's entries: all but a profile's

	// cpRecs are the records of the checkpoint file the commit appends (cpfile.go): the
	// aggregates of open periods and all it stores, and what it drops of them, and the copy
	// of its bucket writes (setAgg).
	cpRecs  []byte
	cpFrame *cpFrameWrite // the first of cpRecs, being written (startCheckpoints)
	// held are the records a group's txn stages while an operation of it stages (a bucket
	// retired: retireBucket): the group's batch holds their writes before the operation's, so
	// they go before the operation's records when it merges (staging says one is).
	held    []byte
	staging bool

	logged []loggedEvent // the events applied, for the group's log record (eventlog.go)
	points []pointRecord // history points of earlier groups, for the log
	erase  *erasure      // what the operation erases: the commit seals without it (seal.go)
	// afterCommit runs once the commit is durable and applied, before callers are answered.
	afterCommit func()
	// published run under the write lock once the store's snapshot shows the commit.
	published []func()
	// historyPoints counts the points pending before the batch that it stores: they stay
	// pending for History readers until the commit's snapshot shows them, so that a reader
	// never misses its own write's point.
	historyPoints int
	// sizeHint is how many aggregates the overlay is made for.
	sizeHint int
	reader   *pointReader // the group's, made by storeGet; closed by release
	// idReaders are the group's readers of each run of ids, made by storedID as it needs
	// them; closed by release.
	idReaders []*pointReader
	// from is where the group's lists ended when this operation's txn began (child).
	from listEnds
	// keyBuf is the group's buffer for the key of an id it looks up or stages.
	keyBuf []byte
	// aggs is what an operation's txn gives the domain's rules to stage through (staging.go).
	aggs staged
	// exclusive is set on the txn of an exclusive operation; rateUndo is an operation's undo
	// log of the times it staged (rate.go).
	exclusive bool
	rateUndo  []rateUndo
}

// memKey names a member's aggregate in memory as a write stages it: in an in-memory span of
// a window, by its start (rollingSpan for a rolling window's current span), or in a rolling
// window's bucket (bucket set), by the member's handle. Keys of fixed size: the overlay is
// hashed some ten times an event.
type memKey struct {
	w      *window
	start  int64
	h      uint32
	bucket bool
}

func memKeyOf(w *window, start int64, h uint32) memKey {
	if w.w.IsRolling() {
		start = rollingSpan
	}
	return memKey{w: w, start: start, h: h}
}

type memVal struct {
	v       slot
	present bool
}

type idVal struct {
	ev      event
	present bool
}

// undoEntry is what an operation's write replaced in its group's overlay: old, or nothing.
type undoEntry[K comparable, V any] struct {
	k   K
	old V
	had bool
}

// stageIn sets k to v in an overlay, noting first in log (when it is an operation's) what it
// replaces.
func stageIn[K comparable, V any](m map[K]V, log *[]undoEntry[K, V], k K, v V) {
	if log != nil {
		old, had := m[k]
		*log = append(*log, undoEntry[K, V]{k, old, had})
	}
	m[k] = v
}

// playBack undoes log's writes in m, last first.
func playBack[K comparable, V any](m map[K]V, log []undoEntry[K, V]) {
	for i := len(log) - 1; i >= 0; i-- {
		if u := log[i]; u.had {
			m[u.k] = u.old
		} else {
			delete(m, u.k)
		}
	}
}

const rollingSpan = 0

func (s *Store) newTxn(now int64) *txn {
	tx := &txn{e: s, now: now, batch: s.db.NewBatch(), seq: s.seq, touched: make(map[*board]bool)}
	s.spare.takeLists(tx)
	return tx
}

// child returns the txn of an operation in tx's group. It appends its changes, checkpoint
// records and events to the group's own lists, past their ends: merging it only moves the
// ends, and a failure leaves them where they were (what it appended is written over).
func (tx *txn) child() *txn {
	tx.staging = true
	return &txn{e: tx.e, now: tx.now, parent: tx, batch: tx.e.db.NewBatch(), seq: tx.seq, touched: make(map[*board]bool),
		memUndo: tx.e.spare.memUndo[:0], idsUndo: tx.e.spare.idsUndo[:0],
		after: tx.after, cpRecs: tx.cpRecs, logged: tx.logged, points: tx.points, from: tx.ends()}
}

// listEnds are where a txn's lists end.
type listEnds struct{ after, cpRecs, logged, points int }

func (tx *txn) ends() listEnds {
	return listEnds{len(tx.after), len(tx.cpRecs), len(tx.logged), len(tx.points)}
}

// undoLog returns log, one of tx's undo logs, when tx is an operation's; nil when it is a
// group's, which keeps none.
func undoLog[E any](tx *txn, log *[]E) *[]E {
	if tx.parent == nil {
		return nil
	}
	return log
}

// group returns the txn of tx's group: tx, or its parent.
func (tx *txn) group() *txn {
	if tx.parent != nil {
		return tx.parent
	}
	return tx
}

// overlayPerEvent is about how many aggregates an event stages: a window's each, and a rolling
// window's bucket. A group's overlay is made that large at once rather than grown step by step.
const overlayPerEvent = 6

// mergeInto keeps the child's changes in its parent: the overlay has them already.
func (tx *txn) mergeInto(p *txn) {
	defer tx.batch.Close()
	if err := p.batch.Apply(tx.batch, nil); err != nil {
		panic("embedded: applying a batch built in memory: " + err.Error())
	}
	p.profiles = mergeMap(p.profiles, tx.profiles)
	p.seq = tx.seq
	if p.ends() != tx.from {
		panic("embedded: a group's lists changed while an operation staged into them")
	}
	if p.staging = false; len(p.held) > 0 {
		own := slices.Clone(tx.cpRecs[tx.from.cpRecs:])
		tx.cpRecs = append(append(tx.cpRecs[:tx.from.cpRecs], p.held...), own...)
		p.held = p.held[:0]
	}
	p.after, p.cpRecs, p.logged, p.points = tx.after, tx.cpRecs, tx.logged, tx.points
	p.breaks = append(p.breaks, len(p.after))
	if tx.erase != nil {
		p.erase = tx.erase
	}
	p.global = p.global || tx.global
	p.moved = p.moved || tx.moved
	p.deferredBuckets = p.deferredBuckets || tx.deferredBuckets
	for b := range tx.touched {
		p.touched[b] = true
	}
}

// undo takes an operation that failed out of its group's overlay, last write first.
func (tx *txn) undo() {
	g := tx.group()
	playBack(g.mem, tx.memUndo)
	playBack(g.ids, tx.idsUndo)
	tx.undoTimes()
	tx.memUndo, tx.idsUndo = tx.memUndo[:0], tx.idsUndo[:0]
	// What it appended past the group's ends holds nothing of use, only pointers.
	clear(tx.after[len(g.after):])
	clear(tx.logged[len(g.logged):])
	g.staging, g.cpRecs, g.held = false, append(g.cpRecs, g.held...), g.held[:0]
}

// release gives the txn's overlay, emptied, for the next groups once the group is committed,
// or an operation's undo logs for the next operations once it is merged or undone. The
// writer alone makes and drops txns.
func (tx *txn) release() {
	if tx.parent == nil {
		tx.e.spare.put(tx.mem, tx.memPeak, tx.ids, tx.idsPeak)
		tx.e.spare.keepLists(tx)
	} else {
		tx.e.spare.keepUndo(tx.memUndo, tx.idsUndo)
	}
	tx.mem, tx.ids, tx.memUndo, tx.idsUndo = nil, nil, nil, nil
	tx.closeIDReaders()
	if tx.reader != nil {
		tx.reader.close()
		tx.reader = nil
	}
}

// discard ends a txn that is not committed, or whose commit is done.
func (tx *txn) discard() {
	tx.release()
	tx.batch.Close()
}

// spareOverlays keeps the overlays of groups done with, emptied: one is made for all its
// group's events at once (some 1 MiB at 2048 events), some 40 times a second; made anew, they
// were a quarter of the bytes the server allocated. It keeps the operations' undo logs too.
type spareOverlays struct {
	mem     []spareMap[memKey, memVal]
	ids     []spareMap[string, idVal]
	memUndo []undoEntry[memKey, memVal]
	idsUndo []undoEntry[string, idVal]
	lists   spareLists
	// recent follows the overlays' size hints: the largest of late, decaying by a 64th a
	// group, so that a spare grown in a burst is dropped once the groups stay small.
	recent int
}

// spareMap is a spare overlay and the most entries it ever held. A map does not shrink, and
// clearing it costs its capacity, not its entries: one grown by a preload's groups of 2 048
// events and cleared after each paced group of 100 cost 5% of the server's CPU.
type spareMap[K comparable, V any] struct {
	m    map[K]V
	peak int
}

func (s *spareOverlays) memMap(hint int) (map[memKey]memVal, int) {
	s.recent = max(hint, s.recent-s.recent/64)
	return take(&s.mem, hint, s.recent)
}

func (s *spareOverlays) idsMap(hint int) (map[string]idVal, int) {
	return take(&s.ids, hint, s.recent/overlayPerEvent)
}

func (s *spareOverlays) put(mem map[memKey]memVal, memPeak int, ids map[string]idVal, idsPeak int) {
	give(&s.mem, mem, memPeak)
	give(&s.ids, ids, idsPeak)
}

// keepUndo keeps an operation's undo logs, unless they grew past what four groups of the
// most events write.
func (s *spareOverlays) keepUndo(mem []undoEntry[memKey, memVal], ids []undoEntry[string, idVal]) {
	if cap(mem) <= spareEntries {
		s.memUndo = mem[:0]
	}
	if cap(ids) <= spareEntries {
		s.idsUndo = ids[:0]
	}
}

// spareLists are a group's lists, emptied, for the next group: grown anew from nothing for
// each group and each operation, and copied from one into the other, they would be a quarter
// of the bytes the writer allocates.
type spareLists struct {
	after  []change
	breaks []int
	cpRecs []byte
	logged []loggedEvent
}

func (s *spareOverlays) takeLists(tx *txn) {
	l := &s.lists
	tx.after, tx.breaks, tx.cpRecs, tx.logged = l.after, l.breaks, l.cpRecs, l.logged
	*l = spareLists{}
}

// keepLists keeps a group's lists once it is done with, unless they grew past what four
// groups of the most events hold, or a checkpoint's frame may still be reading its records.
func (s *spareOverlays) keepLists(tx *txn) {
	if tx.cpFrame != nil || cap(tx.after) > spareEntries || cap(tx.logged) > spareEvents || cap(tx.cpRecs) > maxLogBuffer {
		return
	}
	clear(tx.after) // what the changes and events hold is garbage now
	clear(tx.logged)
	s.lists = spareLists{tx.after[:0], tx.breaks[:0], tx.cpRecs[:0], tx.logged[:0]}
}

// spareMaps is how many maps of a kind spareOverlays keeps; spareEvents is four groups of the
// most events, and spareEntries the most entries a map or list it keeps may have held (a map
// does not shrink) for that many. A spare map is taken while it held at most spareOver times
// the recent hints, or spareSmall entries, which cost little to clear.
const (
	spareMaps    = 4
	spareEvents  = 4 * 2048
	spareEntries = spareEvents * overlayPerEvent
	spareOver    = 2
	spareSmall   = 1024
)

// take returns a spare map, emptied, and the most entries it held; or, when there is none
// near recent's size, a new one made for hint entries. A spare too large is dropped.
func take[K comparable, V any](spare *[]spareMap[K, V], hint, recent int) (map[K]V, int) {
	for n := len(*spare); n > 0; n-- {
		sm := (*spare)[n-1]
		*spare = (*spare)[:n-1]
		if sm.peak <= max(spareOver*recent, spareSmall) {
			return sm.m, sm.peak
		}
	}
	return make(map[K]V, hint), 0
}

// give keeps m, emptied, unless it grew past spareEntries; peak is the most it held before.
func give[K comparable, V any](spare *[]spareMap[K, V], m map[K]V, peak int) {
	peak = max(peak, len(m))
	if m != nil && peak <= spareEntries && len(*spare) < spareMaps {
		clear(m)
		*spare = append(*spare, spareMap[K, V]{m, peak})
	}
}

// mergeMap copies src into dst, making dst when it is nil and src is not empty.
func mergeMap[K comparable, V any](dst, src map[K]V) map[K]V {
	if len(src) == 0 {
		return dst
	}
	if dst == nil {
		dst = make(map[K]V, len(src))
	}
	maps.Copy(dst, src)
	return dst
}

// onCommit queues a change to memory for when the group is durable, made in order.
func (tx *txn) onCommit(b *board, f func()) { tx.queue(b, change{f: f, kind: changeOrdered}) }

// onCommitFree queues a change that touches no window's spans or buckets (lanes.go).
func (tx *txn) onCommitFree(b *board, f func()) { tx.queue(b, change{f: f, kind: changeFree}) }

// onCommitBooks queues a change to the store's own books (where a history point's record
// is, where a replay starts) that no board's entries, names or views see: unlike a change of
// no board, it withdraws no published top and tells no watcher anything changed.
func (tx *txn) onCommitBooks(f func()) { tx.after = append(tx.after, change{f: f, kind: changeFree}) }

func (tx *txn) queue(b *board, c change) {
	tx.after = append(tx.after, c)
	if b != nil {
		tx.touched[b] = true
	} else {
		tx.global = true
		tx.moved = tx.moved || c.kind == changeOrdered
	}
}

// nextSeq takes the next event sequence number. Only an operation's txn takes them: they
// reach the group, and the store's record of the last one, when it merges.
func (tx *txn) nextSeq() uint64 {
	if tx.parent == nil {
		panic("embedded: nextSeq outside an operation")
	}
	tx.seq++
	return tx.seq
}

func (tx *txn) set(k, v []byte) {
	if err := tx.batch.Set(k, v, nil); err != nil {
		panic("embedded: batch set: " + err.Error())
	}
}

func (tx *txn) del(k []byte) {
	if err := tx.batch.Delete(k, nil); err != nil {
		panic("embedded: batch delete: " + err.Error())
	}
}

func (tx *txn) delRange(lo, hi []byte) {
	if err := tx.batch.DeleteRange(lo, hi, nil); err != nil {
		panic("embedded: batch delete range: " + err.Error())
	}
}

// handle returns member's handle on b. A member new to the board is interned when create is
// set, under the readers' lock, so that everything the write stages and applies names it by
// handle (one whose write fails keeps a handle and no entry, as a member deleted does); else
// it has none, and no aggregate in memory or in the overlay.
func (tx *txn) handle(b *board, member string, create bool) (uint32, bool) {
	if h, ok := b.members.lookup(member); ok || !create {
		return h, ok
	}
	tx.e.mu.Lock()
	defer tx.e.mu.Unlock()
	return b.members.intern(member), true
}

// memGet reads a member's aggregate in the rolling window w's current span.
func (tx *txn) memGet(b *board, w *window, member string) (slot, bool) {
	h, ok := tx.handle(b, member, false)
	if !ok {
		return slot{}, false
	}
	return tx.entryGet(w, rollingSpan, h)
}

// memSet stages a member's aggregate in the rolling window w's current span.
func (tx *txn) memSet(b *board, w *window, member string, v slot, present bool) {
	if h, ok := tx.handle(b, member, present); ok {
		tx.entrySet(b, w, rollingSpan, 0, h, member, toAgg(aggregate(v), present))
	}
}

// get reads k in the overlay.
func (tx *txn) get(k memKey) (memVal, bool) {
	v, ok := tx.group().mem[k]
	return v, ok
}

// put stages k in the overlay, noting in an operation's undo log what it replaces.
func (tx *txn) put(k memKey, v slot, present bool) {
	g := tx.group()
	if g.mem == nil {
		g.mem, g.memPeak = g.e.spare.memMap(g.sizeHint)
	}
	stageIn(g.mem, undoLog(tx, &tx.memUndo), k, memVal{v, present})
}

// entryGet reads member h's aggregate in the in-memory span of w at start (a rolling
// window's current span, whatever start) through the overlay. Memory holds every such
// aggregate, hidden members' included: the store is never asked.
func (tx *txn) entryGet(w *window, start int64, h uint32) (slot, bool) {
	if v, ok := tx.get(memKeyOf(w, start, h)); ok {
		return v.v, v.present
	}
	sp := w.span(start)
	if sp == nil {
		return slot{}, false
	}
	return sp.slots.get(h)
}

// entrySet stages member h's aggregate in the in-memory span [start, end) of w. The store
// holds a rolling window's buckets, not its current span; for a calendar window or all it
// gets the aggregate at once, or behind the events when a submit changed it (checkpoint.go).
// A calendar window's or all's entry takes the tag of a (setTag: a.Seq is not 0, the event
// that made it is known); else it keeps its own.
func (tx *txn) entrySet(b *board, w *window, start, end int64, h uint32, member string, a laurel.Agg) {
	v, present := slot(fromAgg(a)), a.Present()
	if !present {
		if _, had := tx.entryGet(w, start, h); !had {
			return
		}
	}
	tx.put(memKeyOf(w, start, h), v, present)
	set := entryChange{b: b, w: w, start: start, end: end, member: member, v: v, h: h, present: present}
	if w.w.IsRolling() {
		set.to = toRollingSpan
	} else {
		set.to, set.deferred, set.first = toSpan, tx.deferAggs, tx.e.seq+1
		set.tag, set.setTag = a.Tag, a.Seq != 0
		if !set.deferred {
			tx.spanAgg(b.cfg.ID, w.name, start, member, aggregate(v), present, tx.seq)
		}
	}
	tx.queue(b, change{kind: changeLane + int8(w.lane), set: set})
}

// setAgg stages a rolling window's bucket aggregate that counts every event up to the
// sequence number asOf, or its removal: in the store, and the same in the checkpoint file's
// copy of the buckets (cpsection.go, "Buckets"), in the order of the batch.
func (tx *txn) setAgg(k []byte, a aggregate, present bool, asOf uint64) {
	if present {
		tx.set(k, encodeAggAsOf(a, asOf))
	} else {
		tx.del(k)
	}
	if tx.staging {
		tx.held = appendCPKeyed(tx.held, k, a, present, asOf)
	} else {
		tx.cpRecs = appendCPKeyed(tx.cpRecs, k, a, present, asOf)
	}
}

// bucketsFrom stages, in the checkpoint file, that it holds every bucket of board's rolling
// window from start on: a board made anew has none in the store.
func (tx *txn) bucketsFrom(board, window string, start int64) {
	tx.cpRecs = appendCPFrom(tx.cpRecs, board, window, start)
}

// spanAgg stages, in the checkpoint file, an aggregate of an open period or all that counts
// every event up to the sequence number asOf, or its removal.
func (tx *txn) spanAgg(board, window string, start int64, member string, a aggregate, present bool, asOf uint64) {
	tx.cpRecs = appendCPAgg(tx.cpRecs, board, window, start, member, a, present, asOf)
}

// dropSpans stages, in the checkpoint file, the removal of every aggregate of open periods
// and all under the key prefix p: a board's, a window's or a period's.
func (tx *txn) dropSpans(p []byte) { tx.cpRecs = appendCPDrop(tx.cpRecs, p) }

// bucketGet reads a rolling window's bucket aggregate of member h (known: the member has a
// handle) through the overlay: from memory for the newest bucket, where events fall (and
// those retired), and from the store for older ones, and for a member without a handle.
func (tx *txn) bucketGet(b *board, w *window, start int64, h uint32, known bool, member string) (aggregate, bool, error) {
	if known {
		if v, ok := tx.get(memKey{w: w, start: start, h: h, bucket: true}); ok {
			return aggregate(v.v), v.present, nil
		}
		if bk := w.bucketAt(start); bk != nil {
			v, ok := bk.slots.get(h)
			return aggregate(v), ok, nil
		}
	}
	return tx.storedAgg(aggKey(b.cfg.ID, w.name, start, member))
}

// bucketSet stages a rolling window's bucket aggregate of member h, and keeps the newest
// bucket in memory true to it once committed. Every write of a bucket goes through here. A
// submit's change to the newest bucket is written behind, like an open period's
// (checkpoint.go); any other is written at once.
func (tx *txn) bucketSet(b *board, w *window, start int64, h uint32, member string, a aggregate, present bool) {
	e := tx.e
	e.reachBucket(tx, b, w, start)
	tx.put(memKey{w: w, start: start, h: h, bucket: true}, slot(a), present)
	nb := w.newest
	deferred, first := tx.deferAggs && nb != nil && nb.start == start, e.seq+1
	if deferred {
		tx.deferredBuckets = true
	} else {
		tx.setAgg(aggKey(b.cfg.ID, w.name, start, member), a, present, tx.seq)
	}
	tx.queue(b, change{kind: changeLane + int8(w.lane), set: entryChange{to: toBucket, b: b, w: w, start: start,
		member: member, v: slot(a), h: h, present: present, deferred: deferred, first: first, nb: nb}})
}

// storedAgg reads a stored aggregate as committed: a write's own are in its overlay.
func (tx *txn) storedAgg(k []byte) (aggregate, bool, error) {
	v, ok, err := tx.storeGet(k)
	if err != nil || !ok {
		return aggregate{}, false, err
	}
	a, err := decodeAgg(v)
	return a, err == nil, err
}

// idGet reads the counted event with id through the overlay: the group's, then the events
// since the last seal and those being sealed, then the ids of sealed events. The filter
// answers first for all but the overlay: it holds every id staged (idSet) or read back from
// the log at Open as well as those stored, so an id it has never seen is in none of them.
func (tx *txn) idGet(board, id string) (event, bool, error) {
	g := tx.group()
	g.keyBuf = appendKey(g.keyBuf[:0], tagID, board, id)
	k := g.keyBuf
	if v, ok := g.ids[string(k)]; ok {
		return v.ev, v.present, nil
	}
	if tx.e.ids.absent(k) {
		return event{}, false, nil
	}
	for _, r := range []*recentEvents{tx.e.recent, tx.e.sealing} {
		if ev, ok := r.byID(board, id); ok {
			return ev, true, nil
		}
	}
	v, ok, err := tx.storedID(board, id)
	if err != nil || !ok {
		return event{}, false, err
	}
	ev, whole, err := decodeID(v, id)
	if err != nil || whole {
		return ev, err == nil, err
	}
	// The record names the sealed event, which holds the rest: stored by the same seal or
	// import, and deleted only with it.
	if v, ok, err = tx.storeGet(sealedKey(ev.seq, board)); err != nil || !ok {
		return event{}, false, cmp.Or(err, fmt.Errorf("embedded: the id %q of board %q names event %d, which the store does not hold: %w", id, board, ev.seq, errCorrupt))
	}
	_, ev, _, err = decodeSealed(ev.seq, v)
	return ev, err == nil, err
}

// storeGet reads key k in the store as committed before the group, through the group's
// reader, made at its first read and closed by release; the value is valid until the next
// read. The writer's reads of the store (ids the filter lets through, about one new id in a
// hundred; older buckets; profiles) were a Pebble Get each, which builds an iterator over
// every level: some 60 µs at 1M members, with level 0 tens of files deep. The store does not
// change under the reader while the group stages: the last group's batch is applied before
// the next begins, and the ids a seal stores meanwhile are read from the events being sealed
// until the writer ends the seal, between groups.
func (tx *txn) storeGet(k []byte) ([]byte, bool, error) {
	for tx.parent != nil {
		tx = tx.parent
	}
	if tx.reader == nil {
		r, err := newPointReader(tx.e.db)
		if err != nil {
			return nil, false, err
		}
		tx.reader = r
	}
	return tx.reader.get(k)
}

// idSet notes in the overlay that id names ev (present) or no event. The ids of sealed events
// are stored by the seal; a retraction or deletion removes a sealed one itself.
func (tx *txn) idSet(board string, ev event, present bool) {
	g := tx.group()
	g.keyBuf = appendKey(g.keyBuf[:0], tagID, board, ev.id)
	if g.ids == nil {
		g.ids, g.idsPeak = g.e.spare.idsMap(g.sizeHint / overlayPerEvent)
	}
	stageIn(g.ids, undoLog(tx, &tx.idsUndo), string(g.keyBuf), idVal{ev, present})
	if present {
		tx.e.ids.add(g.keyBuf)
	}
}
