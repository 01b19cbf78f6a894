package embedded_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/laurel/laurel"
	"github.com/laurel/laurel/embedded"
	"github.com/laurel/laurel/laureltest"
)

// export writes e's dump.
func export(t *testing.T, e *embedded.Store) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := laurel.NewDumpWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Export(context.Background(), w); err != nil {
		t.Fatalf("Export: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// importDump loads dump into the store in dir.
func importDump(dir string, dump []byte, opts embedded.Options) error {
	r, err := laurel.NewDumpReader(bytes.NewReader(dump))
	if err != nil {
		return err
	}
	return embedded.Import(dir, r, opts)
}

// TestDumpRoundTrip: a store's dump holds what it holds, in the API's words, and a store
// imported from it dumps the same bytes.
func TestDumpRoundTrip(t *testing.T) {
	ctx := context.Background()
	c := laureltest.NewClock("2026-11-16T10:00:00Z") // a Monday
	e := testStore(t, "", c)
	putBoard(t, e, "cal", laurel.BoardSpec{Windows: []string{"day", "week", "all"}, LateLimit: ptr("1h"), Keep: ptr(3)})
	putBoard(t, e, "roll", laurel.BoardSpec{Windows: []string{"last3d", "all"}, Mode: ptr("best"), LateLimit: ptr("7d")})
	if _, err := e.PutProfile(ctx, "ada", laurel.ProfileSpec{Name: ptr("Ada"), Metadata: json.RawMessage(`{ "team": "red" }`)}); err != nil {
		t.Fatal(err)
	}
	ev := func(board, member string, value int64, ts, id string) laurel.Event {
		return laurel.Event{Board: board, Member: member, Value: value, TS: at(ts), HasTS: true, ID: id}
	}
	submit(t, e,
		ev("cal", "ada", 5, "2026-11-16T09:00:00Z", "e1"),
		ev("cal", "bob", 3, "2026-11-16T09:10:00Z", "e2"),
		ev("cal", "carol", 4, "2026-11-16T09:20:00Z", ""),
		ev("cal", "dave", 2, "2026-11-16T09:30:00Z", "e3"),
	)
	submit(t, e, laurel.Event{Board: "cal", Member: "bob", Value: 1, TS: at("2026-11-16T09:40:00Z"), HasTS: true, Name: ptr("Bob")})
	submit(t, e, ev("roll", "ada", 7, "2026-11-15T08:00:00Z", "r1"), ev("roll", "eve", 9, "2026-11-16T09:00:00Z", "r2"))
	// An event's point waits for the next commit; an export right after the event has it.
	if d := export(t, e); !strings.Contains(string(d), `{"history":{"board":"roll","member":"eve","seq":7,`) {
		t.Fatalf("the point of the last event is missing:\n%s", d)
	}

	// The day closes with ada 5, carol 4, bob 4, dave 2; then bob's first event is retracted
	// (the closed day keeps it), dave is deleted (rank 4 removed) and carol hidden.
	c.Set("2026-11-17T12:00:00Z")
	submit(t, e, ev("cal", "ada", 1, "2026-11-17T11:30:00Z", "e4"), ev("cal", "eve", 6, "2026-11-17T11:45:00Z", "e5"))
	if err := e.Retract(ctx, "cal", "e2"); err != nil {
		t.Fatal(err)
	}
	if err := e.DeleteMember(ctx, "dave"); err != nil {
		t.Fatal(err)
	}
	if err := e.Hide(ctx, "carol"); err != nil {
		t.Fatal(err)
	}
	putBoard(t, e, "cal", laurel.BoardSpec{Keep: ptr(2)}) // marks the calendar windows

	dump := export(t, e)
	lines := strings.Split(strings.TrimSuffix(string(dump), "\n"), "\n")
	if lines[0] != fmt.Sprintf(`{"laurel_dump":%d}`, laurel.DumpVersion) || !strings.HasPrefix(lines[len(lines)-1], `{"end":{"records":`) {
		t.Fatalf("header %s", lines[0])
	}
	for _, want := range []string{
		`{"profile":{"member":"ada","name":"Ada","metadata":{"team":"red"}}}`,
		`{"profile":{"member":"bob","name":"Bob"}}`,
		`{"hidden":"carol"}`,
		fmt.Sprintf(`{"board":{"id":"cal","config":{"order":"desc","mode":"sum","windows":["day","week","all"],"timezone":"UTC","week_start":"monday","late_limit":"1h","keep":2,"title":"","metadata":{}},"created_at":%d,"marks":{"day":{"closed_through":%d,"dropped_before":%d},"week":{"closed_through":%d,"dropped_before":%d}}}}`,
			at("2026-11-16T10:00:00Z"), at("2026-11-16T00:00:00Z"), at("2026-11-13T00:00:00Z"), at("2026-11-09T00:00:00Z"), at("2026-10-19T00:00:00Z")),
		fmt.Sprintf(`{"event":{"board":"cal","seq":2,"member":"bob","value":3,"ts":%d,"id":"e2","retracted":true}}`, at("2026-11-16T09:10:00Z")),
		fmt.Sprintf(`{"event":{"board":"cal","seq":3,"member":"carol","value":4,"ts":%d}}`, at("2026-11-16T09:20:00Z")),
		fmt.Sprintf(`{"agg":{"board":"cal","window":"day","start":%d,"member":"ada","score":1,"at":%d}}`, at("2026-11-17T00:00:00Z"), at("2026-11-17T11:30:00Z")),
		fmt.Sprintf(`{"agg":{"board":"cal","window":"all","start":0,"member":"ada","score":6,"at":%d}}`, at("2026-11-17T11:30:00Z")),
		fmt.Sprintf(`{"agg":{"board":"roll","window":"last3d","start":%d,"member":"ada","score":7,"at":%d}}`, at("2026-11-15T00:00:00Z"), at("2026-11-15T08:00:00Z")),
		fmt.Sprintf(`{"closed":{"board":"cal","window":"day","id":"2026-11-16","start":%d,"end":%d,"total":4,"removed":[4]}}`, at("2026-11-16T00:00:00Z"), at("2026-11-17T00:00:00Z")),
		fmt.Sprintf(`{"frozen":{"board":"cal","window":"day","start":%d,"rank":1,"member":"ada","score":5,"at":%d}}`, at("2026-11-16T00:00:00Z"), at("2026-11-16T09:00:00Z")),
		fmt.Sprintf(`{"frozen":{"board":"cal","window":"day","start":%d,"rank":3,"member":"bob","score":4,"at":%d}}`, at("2026-11-16T00:00:00Z"), at("2026-11-16T09:40:00Z")),
		fmt.Sprintf(`{"history":{"board":"cal","member":"bob","seq":5,"ts":%d,"points":{"all":[4,3],"day":[4,3],"week":[4,3]}}}`, at("2026-11-16T09:40:00Z")),
	} {
		if !strings.Contains(string(dump), "\n"+want+"\n") {
			t.Errorf("the dump lacks the line\n%s", want)
		}
	}
	for _, gone := range []string{`"member":"dave"`, `"seq":2,"ts"`} { // deleted; a retracted event's point
		if strings.Contains(string(dump), gone) {
			t.Errorf("the dump holds %s", gone)
		}
	}
	if t.Failed() {
		t.Fatalf("dump:\n%s", dump)
	}

	dir := t.TempDir()
	if err := importDump(dir, dump, embedded.Options{Now: c.Now}); err != nil {
		t.Fatalf("Import: %v", err)
	}
	e2 := testStore(t, dir, c)
	if again := export(t, e2); !bytes.Equal(again, dump) {
		t.Fatalf("the imported store dumps otherwise:\n%s\nthen:\n%s", dump, again)
	}
	for _, h := range [][3]string{{"cal", "all", "ada"}, {"cal", "day", "bob"}, {"roll", "last3d", "eve"}} {
		if before, after := history(t, e, h[0], h[1], h[2], 10), history(t, e2, h[0], h[1], h[2], 10); fmt.Sprint(before) != fmt.Sprint(after) || len(after) == 0 {
			t.Fatalf("history %v after import: %v, before: %v", h, after, before)
		}
	}
	// The imported store serves: ids are known (a retracted one is free), the closed day
	// reads as it did.
	res := submit(t, e2, ev("cal", "ada", 1, "2026-11-17T11:30:00Z", "e4"), ev("cal", "ada", 2, "2026-11-17T11:50:00Z", "e2"))
	if res[0].Status != laurel.StatusDuplicate || res[1].Status != laurel.StatusApplied {
		t.Fatalf("after import: %+v", res)
	}
	q := laurel.Query{Board: "cal", Window: "day", Period: "2026-11-16"}
	before, err := e.Page(ctx, q, 0, 10, laurel.ScoreRange{})
	if err != nil {
		t.Fatal(err)
	}
	after, err := e2.Page(ctx, q, 0, 10, laurel.ScoreRange{})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(before) != fmt.Sprint(after) || after.Total != 2 || after.Entries[1].Member != "bob" {
		t.Fatalf("the closed day after import:\n%+v\nbefore:\n%+v", after, before)
	}
}

// TestImportRefusesInvalidDumps: laureltest.ImportRefuses, on the embedded store.
func TestImportRefusesInvalidDumps(t *testing.T) {
	laureltest.ImportRefuses(t, func(t *testing.T) laureltest.Target { return laureltest.EmbeddedTarget(t) })
}

// TestImportRefuses: a dump that is not one, or that the store could not hold, is refused
// naming its line, and leaves the store empty for the next attempt.
func TestImportRefuses(t *testing.T) {
	board := `{"board":{"id":"b","config":{"windows":["day","all"]},"created_at":0}}`
	const head = laureltest.DumpHeader
	// A dump of the version before records is read as it was.
	if err := importDump(t.TempDir(), laureltest.SealDump(`{"laurel_dump":2}`, board), embedded.Options{}); err != nil {
		t.Fatalf("a version-2 dump: %v", err)
	}
	// A dump of the version before tags, with an event, is read as it was: its events untagged.
	event := `{"event":{"board":"b","seq":1,"member":"a","value":1,"ts":0}}`
	if err := importDump(t.TempDir(), laureltest.SealDump(`{"laurel_dump":3}`, board, event), embedded.Options{}); err != nil {
		t.Fatalf("a version-3 dump: %v", err)
	}
	// A dump of the version before subscores is read as it was.
	if err := importDump(t.TempDir(), laureltest.SealDump(`{"laurel_dump":4}`, board, event), embedded.Options{}); err != nil {
		t.Fatalf("a version-4 dump: %v", err)
	}
	for _, tc := range []struct {
		name  string
		lines []string
		want  string
	}{
		{"not a dump", []string{"hello"}, "not a laurel dump"},
		{"another version", []string{`{"laurel_dump":1}`}, "dump version 1"},
		{"a version too new", []string{`{"laurel_dump":6}`}, "dump version 6: this laurel reads versions 2 to 5; a newer laurel wrote it"},
		{"a subscore in a version-4 dump", []string{`{"laurel_dump":4}`, `{"board":{"id":"b","config":{"windows":["all"],"subscore":"asc"},"created_at":0}}`, `{"event":{"board":"b","seq":1,"member":"a","value":1,"subscore":2,"ts":0}}`}, "subscore"},
		{"tags in a version-3 dump", []string{`{"laurel_dump":3}`, board, `{"event":{"board":"b","seq":1,"member":"a","value":1,"ts":0,"tag":"x"}}`}, "a version-3 dump holds no tags"},
		{"records in a version-2 dump", []string{`{"laurel_dump":2}`, `{"record":{"kind":"k","key":"a","value":""}}`}, "a version-2 dump holds no records"},
		{"a record after a board", []string{head, board, `{"record":{"kind":"k","key":"a","value":""}}`}, "records come before the first board"},
		{"unknown field", []string{head, `{"hidden":"a","color":"red"}`}, `dump record 2: json: unknown field "color"`},
		{"unknown window", []string{head, board, `{"agg":{"board":"b","window":"month","start":0,"member":"m","score":1,"at":1}}`}, `dump record 3: board "b" has no window "month"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			err := importDump(dir, []byte(strings.Join(tc.lines, "\n")+"\n"), embedded.Options{})
			if err == nil || laurel.ErrorCode(err) != laurel.EInvalid || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want EInvalid with %q", err, tc.want)
			}
			// Nothing of it stays: the same store takes a dump next.
			if err := importDump(dir, laureltest.SealDump(head, board), embedded.Options{}); err != nil {
				t.Fatalf("a second import: %v", err)
			}
		})
	}

	t.Run("a store with a board", func(t *testing.T) {
		dir := t.TempDir()
		e, err := embedded.Open(dir, embedded.Options{})
		if err != nil {
			t.Fatal(err)
		}
		putBoard(t, e, "b", laurel.BoardSpec{})
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		err = importDump(dir, laureltest.SealDump(head), embedded.Options{})
		if laurel.ErrorCode(err) != laurel.EConflict || !strings.Contains(err.Error(), "not empty") {
			t.Fatalf("got %v, want EConflict: not empty", err)
		}
		e = testStore(t, dir, laureltest.NewClock("2026-11-16T00:00:00Z"))
		if _, err := e.Board(context.Background(), "b"); err != nil {
			t.Fatalf("the store after a refused import: %v", err)
		}
	})
}

// TestImportCutShort: a store whose import stopped half way, as in a crash, is refused by
// Open and by another import, rather than served as it is.
func TestImportCutShort(t *testing.T) {
	fs := vfs.NewCrashableMem()
	var dump bytes.Buffer
	dump.WriteString(laureltest.DumpHeader + "\n")
	for i := range 15_000 { // more than one batch
		fmt.Fprintf(&dump, `{"profile":{"member":"m%05d","name":""}}`+"\n", i)
	}
	// The reader stops at the last part of the dump and takes the crash's image once the
	// first batch is in the log.
	var crashed *vfs.MemFS
	r := &stopReader{r: bytes.NewReader(dump.Bytes()), at: int64(dump.Len()) - 1000, stop: func() {
		// Bounded generously: under the race detector on a loaded machine the first batch
		// has taken over 10 s to reach the log.
		deadline := time.Now().Add(60 * time.Second)
		for logBytes(t, fs) < 100_000 {
			if time.Now().After(deadline) {
				t.Errorf("the import's first batch did not reach the log in 60 s")
				break
			}
			time.Sleep(time.Millisecond)
		}
		// What the system had written when it crashed: the log, unsynced.
		crashed = fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 100, RNG: rand.New(rand.NewPCG(1, 2))})
	}}
	dr, err := laurel.NewDumpReader(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := embedded.Import("db", dr, embedded.Options{FS: fs}); err == nil || !strings.Contains(err.Error(), errStopped.Error()) {
		t.Fatalf("Import: %v", err)
	}
	if _, err := embedded.Open("db", embedded.Options{FS: crashed}); err == nil || !strings.Contains(err.Error(), "did not finish") {
		t.Fatalf("Open after the crash: %v", err)
	}
	if err := importDump("db", laureltest.SealDump(laureltest.DumpHeader), embedded.Options{FS: crashed}); laurel.ErrorCode(err) != laurel.EConflict {
		t.Fatalf("another import after the crash: %v", err)
	}
	// Without a crash, the failed import left the store empty.
	e, err := embedded.Open("db", embedded.Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.Profile(context.Background(), "m00000"); laurel.ErrorCode(err) != laurel.ENotFound {
		t.Fatalf("a profile of the failed import: %v", err)
	}
}

var errStopped = errors.New("stopped")

// stopReader reads r up to at, calls stop, and fails.
type stopReader struct {
	r    io.Reader
	at   int64
	n    int64
	stop func()
}

func (s *stopReader) Read(p []byte) (int, error) {
	if s.n >= s.at {
		if s.stop != nil {
			s.stop()
			s.stop = nil
		}
		return 0, errStopped
	}
	if int64(len(p)) > s.at-s.n {
		p = p[:s.at-s.n]
	}
	n, err := s.r.Read(p)
	s.n += int64(n)
	return n, err
}

// logBytes is the size of the write-ahead logs of the store in fs's "db".
func logBytes(t *testing.T, fs vfs.FS) int64 {
	names, err := fs.List("db")
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, name := range names {
		if strings.HasSuffix(name, ".log") {
			if st, err := fs.Stat(fs.PathJoin("db", name)); err == nil {
				n += st.Size()
			}
		}
	}
	return n
}

// TestExportDuringClose: Close waits for an export under way, which stops at its next record,
// and closes the store without leaking its snapshot.
func TestExportDuringClose(t *testing.T) {
	ctx := context.Background()
	e, err := embedded.Open(t.TempDir(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	putBoard(t, e, "b", laurel.BoardSpec{})
	var evs []laurel.Event
	for i := range 1000 { // more than the dump writer buffers
		evs = append(evs, laurel.Event{Board: "b", Member: fmt.Sprintf("member-%04d", i), Value: 1, Name: ptr("a name")})
	}
	submit(t, e, evs...)
	w := &gateWriter{entered: make(chan struct{}), release: make(chan struct{})}
	exported := make(chan error, 1)
	go func() {
		d, err := laurel.NewDumpWriter(w)
		if err == nil {
			err = e.Export(ctx, d)
		}
		exported <- err
	}()
	<-w.entered
	closed := make(chan error, 1)
	go func() { closed <- e.Close() }()
	time.Sleep(50 * time.Millisecond) // Close is waiting for the export
	close(w.release)
	if err := <-exported; err != nil && laurel.ErrorCode(err) != laurel.EUnavailable {
		t.Fatalf("Export: %v", err)
	}
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// gateWriter holds its write after the first after until released.
type gateWriter struct {
	entered, release chan struct{}
	after, writes    int
	once             sync.Once
}

func (g *gateWriter) Write(p []byte) (int, error) {
	if g.writes++; g.writes > g.after {
		g.once.Do(func() {
			close(g.entered)
			<-g.release
		})
	}
	return len(p), nil
}
