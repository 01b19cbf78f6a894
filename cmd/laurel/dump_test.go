package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/laureltest"
)

// TestExportImport moves a board from the embedded store to the scale-out one and back
// with `laurel export` and `laurel import`, as an operator would, and finds it whole at each
// end: ranks, names, ids (a repeat is a duplicate), history.
func TestExportImport(t *testing.T) {
	data := t.TempDir()
	base, stop := startServe(t, data, nil)
	do(t, "PUT", base+"/v1/boards/solvers", `{"windows": ["all", "week", "last7d"]}`)
	if code, body := do(t, "POST", base+"/v1/boards/solvers/events",
		`{"events": [{"member": "alice", "value": 5, "id": "s-1", "name": "Alice"}, {"member": "bob", "value": 7, "id": "s-2"}]}`); code != http.StatusOK {
		t.Fatalf("submit: %d %v", code, body)
	}
	// The embedded store is locked while served: export refuses it.
	dump := filepath.Join(t.TempDir(), "dump.jsonl")
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"export", "-data", data, "-o", dump}, io.Discard, &stderr); code != 1 || !strings.Contains(stderr.String(), "is in use by another laurel (process") {
		t.Fatalf("export of a served store: exit %d, %s; want 1, saying who holds it", code, stderr.String())
	}

	if code := stop(); code != 0 {
		t.Fatalf("serve exited %d", code)
	}
	stderr.Reset()
	if code := run(context.Background(), []string{"export", "-data", data, "-o", dump}, io.Discard, &stderr); code != 0 ||
		!strings.Contains(stderr.String(), "exported") {
		t.Fatalf("export: exit %d, %s", code, stderr.String())
	}
	if strings.ContainsAny(stderr.String(), "\r\x1b") { // stderr is no terminal: no bar drawn in place
		t.Fatalf("export wrote control characters to a non-terminal: %q", stderr.String())
	}

	store := laureltest.NewScaleOutStore(t)
	so := []string{"-postgres", store.DSN, "-redis", laureltest.RedisAddr(), "-redis-prefix", store.Prefix}
	stderr.Reset()
	if code := run(context.Background(), append([]string{"import", "-i", dump}, so...), io.Discard, &stderr); code != 0 ||
		!strings.Contains(stderr.String(), "imported") {
		t.Fatalf("import into the scale-out store: exit %d, %s", code, stderr.String())
	}
	// Imported again, over a profile changed since: refused before anything is stored.
	base, stop = startServe(t, t.TempDir(), nil, so...)
	if code, body := do(t, "PUT", base+"/v1/members/alice", `{"name": "Alicia"}`); code != http.StatusOK {
		t.Fatalf("rename alice: %d %v", code, body)
	}
	stderr.Reset()
	if code := run(context.Background(), append([]string{"import", "-i", dump}, so...), io.Discard, &stderr); code != 1 ||
		!strings.Contains(stderr.String(), `board "solvers" exists already; nothing was imported`) {
		t.Fatalf("import again: exit %d, %s; want 1 and the board named", code, stderr.String())
	}
	if code, body := do(t, "GET", base+"/v1/members/alice", ""); code != http.StatusOK || body["name"] != "Alicia" {
		t.Fatalf("alice after the refused import: %d %s; want the name Alicia, not the dump's", code, show(body))
	}
	do(t, "PUT", base+"/v1/members/alice", `{"name": "Alice"}`)
	checkMoved(t, base)
	if code, body := do(t, "POST", base+"/v1/boards/solvers/events", `{"member": "carol", "value": 1}`); code != http.StatusOK {
		t.Fatalf("submit after the move: %d %v", code, body)
	}
	stop()

	// And back, into a new embedded store.
	back := filepath.Join(t.TempDir(), "dump2.jsonl")
	stderr.Reset()
	if code := run(context.Background(), append([]string{"export", "-o", back}, so...), io.Discard, &stderr); code != 0 {
		t.Fatalf("export of the scale-out store: exit %d, %s", code, stderr.String())
	}
	fresh := filepath.Join(t.TempDir(), "new")
	stderr.Reset()
	every := progressEvery
	progressEvery = 0 // a progress line at every read: the dump is small
	code := run(context.Background(), []string{"import", "-data", fresh, "-i", back}, io.Discard, &stderr)
	progressEvery = every
	if code != 0 {
		t.Fatalf("import into a new embedded store: exit %d, %s", code, stderr.String())
	}
	// Off a terminal, its two passes show as plain lines, as docs/operations.md says.
	if progress := regexp.MustCompile(`(?m)^(checking the dump|importing): [0-9.]+ MiB of [0-9.]+ MiB \(\d+%\)$`).FindAllStringSubmatch(stderr.String(), -1); len(progress) < 2 ||
		progress[0][1] != "checking the dump" || progress[len(progress)-1][1] != "importing" || strings.ContainsAny(stderr.String(), "\r\x1b") {
		t.Fatalf("import's progress: %q", stderr.String())
	}
	stderr.Reset()
	if code := run(context.Background(), []string{"import", "-data", fresh, "-i", back}, io.Discard, &stderr); code != 1 {
		t.Fatalf("import into a store that has data: exit %d, %s; want 1", code, stderr.String())
	}
	base, stop = startServe(t, fresh, nil)
	defer stop()
	stderr.Reset()
	if code := run(context.Background(), []string{"import", "-data", fresh, "-i", back}, io.Discard, &stderr); code != 1 || !strings.Contains(stderr.String(), "is in use by another laurel (process") {
		t.Fatalf("import into a served store: exit %d, %s; want 1, saying who holds it", code, stderr.String())
	}
	checkMoved(t, base)
	code, body := do(t, "GET", base+"/v1/boards/solvers/entries?window=all", "")
	if code != http.StatusOK || body["total"] != float64(3) {
		t.Fatalf("after moving back: %d %s; want 3 members", code, show(body))
	}
}

// checkMoved checks what TestExportImport wrote, on the server at base.
func checkMoved(t *testing.T, base string) {
	t.Helper()
	code, body := do(t, "GET", base+"/v1/boards/solvers/members/alice?window=last7d", "")
	entry, _ := body["entry"].(map[string]any)
	if code != http.StatusOK || entry["rank"] != float64(2) || entry["score"] != float64(5) || entry["name"] != "Alice" {
		t.Fatalf("alice: %d %s", code, show(body))
	}
	code, body = do(t, "POST", base+"/v1/boards/solvers/events", `{"member": "bob", "value": 7, "id": "s-2"}`)
	if code != http.StatusOK || !strings.Contains(show(body), `"status":"duplicate"`) {
		t.Fatalf("a repeat of an id: %d %s; want a duplicate", code, show(body))
	}
	code, body = do(t, "GET", base+"/v1/boards/solvers/members/bob/history?window=all", "")
	if code != http.StatusOK || !strings.Contains(show(body), `"rank":1`) {
		t.Fatalf("bob's history: %d %s", code, show(body))
	}
}

func TestExportImportFlags(t *testing.T) {
	t.Setenv("LAUREL_POSTGRES", "")
	t.Setenv("LAUREL_REDIS", "")
	notADump := filepath.Join(t.TempDir(), "x.jsonl")
	os.WriteFile(notADump, []byte("hello\n"), 0o600)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"export"}, 2, "give the store"},
		{[]string{"export", "-data", "x", "-postgres", "p", "-redis", "r"}, 2, "not both"},
		{[]string{"export", "-data", filepath.Join(t.TempDir(), "missing")}, 1, "no laurel store there"},
		{[]string{"import", "-data", t.TempDir(), "-i", notADump}, 1, "not a laurel dump"},
		{[]string{"import", "-postgres", "p"}, 2, "-postgres and -redis go together"},
	} {
		var stderr bytes.Buffer
		if code := run(context.Background(), c.args, io.Discard, &stderr); code != c.code || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, %q; want %d and %q", c.args, code, stderr.String(), c.code, c.want)
		}
	}
}

// TestImportRefusesATruncatedDump: a dump cut short — at a line's end, so that every record
// left is valid — imports nothing into either store, from a file or from standard input.
func TestImportRefusesATruncatedDump(t *testing.T) {
	data := t.TempDir()
	base, stop := startServe(t, data, nil)
	do(t, "PUT", base+"/v1/boards/a", `{"windows": ["all"]}`)
	do(t, "PUT", base+"/v1/boards/z", `{"windows": ["all", "day"]}`)
	do(t, "POST", base+"/v1/boards/z/events", `{"events": [{"member": "alice", "value": 5}, {"member": "bob", "value": 7}]}`)
	stop()
	dump := filepath.Join(t.TempDir(), "dump.jsonl")
	if code := run(context.Background(), []string{"export", "-data", data, "-o", dump}, io.Discard, io.Discard); code != 0 {
		t.Fatalf("export: exit %d", code)
	}
	whole, _ := os.ReadFile(dump)
	cut := whole[:bytes.LastIndexByte(whole[:len(whole)-1], '\n')+1] // the trailer gone
	cutFile := filepath.Join(t.TempDir(), "cut.jsonl")
	os.WriteFile(cutFile, cut, 0o600)

	fresh := filepath.Join(t.TempDir(), "new")
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"import", "-data", fresh, "-i", cutFile}, io.Discard, &stderr); code != 1 ||
		!strings.Contains(stderr.String(), "truncated") || !strings.Contains(stderr.String(), "nothing was imported") {
		t.Fatalf("import of a cut dump: exit %d, %q", code, stderr.String())
	}
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Fatalf("the refused import left %s behind: %v", fresh, err)
	}

	store := laureltest.NewScaleOutStore(t)
	so := []string{"-postgres", store.DSN, "-redis", laureltest.RedisAddr(), "-redis-prefix", store.Prefix}
	stderr.Reset()
	if err := runImport(context.Background(), so, bytes.NewReader(cut), &stderr); err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("import of a cut dump from standard input: %v", err)
	}
	// The dump's first board would have been committed first: it is not there.
	e := store.Open(t, laureltest.NewClock("2026-11-22T10:00:00Z").Now)
	if boards, err := e.Boards(context.Background()); err != nil || len(boards) != 0 {
		t.Fatalf("after the refused import the store holds %v, %v", boards, err)
	}
	// The whole dump imports.
	if err := runImport(context.Background(), so, bytes.NewReader(whole), &stderr); err != nil {
		t.Fatalf("import of the whole dump: %v", err)
	}
}

// TestDataBeatsTheEnvironment: in a shell that exports the scale-out store's variables,
// `-data DIR` given on the command line picks the embedded store in DIR, for serve and for
// export (export refused it as "not both", and serve went on the scale-out store); and export
// of a directory that holds no store says so, making nothing there.
func TestDataBeatsTheEnvironment(t *testing.T) {
	env := map[string]string{"LAUREL_POSTGRES": "postgres://laurel@127.0.0.1:1/nowhere", "LAUREL_REDIS": "127.0.0.1:1"}
	data := t.TempDir()
	servedOnce(t, data, env)
	if b := exportOf(t, data, "export -data with $LAUREL_POSTGRES and $LAUREL_REDIS set"); !strings.Contains(b, `"solvers"`) {
		t.Fatalf("the dump: %q; want the board solvers", b)
	}
	empty := t.TempDir()
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"export", "-data", empty, "-o", filepath.Join(t.TempDir(), "d.jsonl")}, io.Discard, &stderr); code != 1 ||
		!strings.Contains(stderr.String(), "no laurel store there") {
		t.Fatalf("export of an empty directory: exit %d, %s; want 1 and no store there", code, stderr.String())
	}
	if left, _ := os.ReadDir(empty); len(left) != 0 {
		t.Fatalf("export of an empty directory left %d files in it", len(left))
	}
}

// TestExportOnASmallDisk: a store on a disk with less free space than a server keeps in
// reserve is exported all the same (export opened it with the reserve, and refused: "the disk
// holding the store is full").
func TestExportOnASmallDisk(t *testing.T) {
	data := filepath.Join(laureltest.SmallDisk(t, 100), "store")
	servedOnce(t, data, nil, "-min-free", "-1")
	if b := exportOf(t, data, "export of a store on a 100 MiB disk"); !strings.Contains(b, `"s-1"`) {
		t.Fatalf("the dump: %q; want the event s-1", b)
	}
}

// servedOnce serves the embedded store in data (with env and args) while it gets the board
// solvers and alice's event s-1, then stops.
func servedOnce(t *testing.T, data string, env map[string]string, args ...string) {
	t.Helper()
	base, stop := startServe(t, data, env, args...)
	if code, body := do(t, "PUT", base+"/v1/boards/solvers", `{"windows": ["all", "day"]}`); code != http.StatusCreated {
		t.Fatalf("create a board: %d %v", code, body)
	}
	if code, body := do(t, "POST", base+"/v1/boards/solvers/events", `{"member": "alice", "value": 5, "id": "s-1"}`); code != http.StatusOK {
		t.Fatalf("submit: %d %v", code, body)
	}
	if code := stop(); code != 0 {
		t.Fatalf("serve exited %d", code)
	}
}

// exportOf exports the embedded store in data and returns the dump; what says what failed.
func exportOf(t *testing.T, data, what string) string {
	t.Helper()
	dump := filepath.Join(t.TempDir(), "dump.jsonl")
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"export", "-data", data, "-o", dump}, io.Discard, &stderr); code != 0 {
		t.Fatalf("%s: exit %d, %s", what, code, stderr.String())
	}
	b, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestFullDiskAtStart: serve, export and import on a disk with no space left exit at once,
// saying so, where serve and export hung (Pebble retried for ever to write the log it replays, and serve answered
// "recovering" all the while; export ignored SIGTERM).
func TestFullDiskAtStart(t *testing.T) {
	disk := laureltest.SmallDisk(t, 100)
	// A store each: the refused open goes on holding its directory until the process exits.
	served, exported := filepath.Join(disk, "served"), filepath.Join(disk, "exported")
	servedOnce(t, served, nil, "-min-free", "-1")
	servedOnce(t, exported, nil, "-min-free", "-1")
	dump := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(dump, []byte(exportOf(t, exported, "export before the disk fills")), 0o600); err != nil {
		t.Fatal(err)
	}
	laureltest.FillDisk(t, disk)
	for _, c := range []struct {
		data string
		args []string
	}{
		{served, []string{"serve", "-addr", "127.0.0.1:0", "-data", served, "-min-free", "-1"}},
		{exported, []string{"export", "-data", exported, "-o", filepath.Join(t.TempDir(), "dump.jsonl")}},
		// A new store: Pebble makes its first files through a logger's Fatalf, which panicked.
		{filepath.Join(disk, "new"), []string{"import", "-data", filepath.Join(disk, "new"), "-min-free", "-1", "-i", dump}},
	} {
		var stderr laureltest.Buffer
		exit := make(chan int, 1)
		go func() { exit <- run(context.Background(), c.args, io.Discard, &stderr) }()
		select {
		case code := <-exit:
			if want := "laurel " + c.args[0] + ": the disk holding " + c.data + " is full"; code != 1 || !strings.Contains(stderr.String(), want) {
				t.Errorf("%s on a full disk: exit %d, %s; want exit 1 and %q", c.args[0], code, stderr.String(), want)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s on a full disk did not exit in 20 s; its log:\n%s", c.args[0], stderr.String())
		}
	}
}

// TestImportInterrupted: a signal (the context's end) stops an import part way, into either
// store, and leaves nothing of it: an embedded import ran to its end, and a scale-out one
// left the boards it had committed.
func TestImportInterrupted(t *testing.T) {
	lines := []string{laureltest.DumpHeader, `{"board":{"id":"b","config":{"windows":["all"]},"created_at":0}}`}
	const n = 100_000
	for i := 1; i <= n; i++ {
		lines = append(lines, fmt.Sprintf(`{"event":{"board":"b","seq":%d,"member":"m%d","value":1,"ts":1}}`, i, i))
	}
	for i := 1; i <= n; i++ {
		lines = append(lines, fmt.Sprintf(`{"agg":{"board":"b","window":"all","start":0,"member":"m%d","score":1,"at":1}}`, i))
	}
	dump := filepath.Join(t.TempDir(), "dump.jsonl")
	if err := os.WriteFile(dump, laureltest.SealDump(lines...), 0o600); err != nil {
		t.Fatal(err)
	}
	// Each store is made new: once for the import timed whole, once for the one stopped.
	for _, c := range []struct {
		name string
		// store makes a new store and returns its flags, and a check that it holds nothing.
		store func() ([]string, func() bool)
	}{
		{"embedded", func() ([]string, func() bool) {
			dir := filepath.Join(t.TempDir(), "new")
			return []string{"-data", dir}, func() bool { _, err := os.Stat(dir); return os.IsNotExist(err) }
		}},
		{"scale-out", func() ([]string, func() bool) {
			store := laureltest.NewScaleOutStore(t)
			return []string{"-postgres", store.DSN, "-redis", laureltest.RedisAddr(), "-redis-prefix", store.Prefix}, func() bool {
				e := store.Open(t, nil)
				defer e.Close()
				_, err := e.Board(context.Background(), "b")
				return laurel.ErrorCode(err) == laurel.ENotFound
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			args, _ := c.store()
			start := time.Now()
			if err := runImport(context.Background(), append(args, "-i", dump), nil, io.Discard); err != nil {
				t.Fatal(err)
			}
			// Stopped a quarter of the way, while it reads the dump: the scale-out import
			// spends much of its time building the index after its commit, which a signal
			// then lets finish (at half its time, one run in the suite was past the commit).
			took := time.Since(start)
			args, empty := c.store()
			ctx, cancel := context.WithCancel(context.Background())
			start = time.Now()
			at := took / 4
			time.AfterFunc(at, cancel)
			err := runImport(ctx, append(args, "-i", dump), nil, io.Discard)
			if err == nil || !strings.Contains(err.Error(), "interrupted") || !strings.Contains(err.Error(), "nothing was imported") {
				t.Fatalf("an import stopped after %v of %v: %v; want it interrupted, nothing imported", at, took, err)
			}
			if after := time.Since(start) - at; after > 2*time.Second {
				t.Errorf("the import stopped %v after the signal", after)
			}
			if !empty() {
				t.Fatalf("the interrupted import left something of it")
			}
		})
	}
}

// TestExportToAFullDisk: an export that fails as its disk fills leaves no part of a dump, so
// that the retry, once there is room, writes the file; and export never replaces a file.
func TestExportToAFullDisk(t *testing.T) {
	data := t.TempDir()
	servedOnce(t, data, nil)
	disk := laureltest.SmallDisk(t, 1)
	laureltest.FillDisk(t, disk)
	out := filepath.Join(disk, "dump.jsonl")
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"export", "-data", data, "-o", out}, io.Discard, &stderr); code != 1 || !strings.Contains(stderr.String(), "no space left") {
		t.Fatalf("export to a full disk: exit %d, %s", code, stderr.String())
	}
	if left, _ := os.ReadDir(disk); len(left) != 1 {
		t.Fatalf("the failed export left %v beside the ballast", left)
	}
	os.Remove(filepath.Join(disk, "ballast"))
	if code := run(context.Background(), []string{"export", "-data", data, "-o", out}, io.Discard, &stderr); code != 0 {
		t.Fatalf("export once there is room: exit %d, %s", code, stderr.String())
	}
	if b, err := os.ReadFile(out); err != nil || !strings.Contains(string(b), `"s-1"`) || !strings.Contains(string(b), `{"end":`) {
		t.Fatalf("the dump: %q, %v; want it whole, with the event s-1", b, err)
	}
	stderr.Reset()
	if code := run(context.Background(), []string{"export", "-data", data, "-o", out}, io.Discard, &stderr); code != 1 || !strings.Contains(stderr.String(), "exists: export never replaces a file") {
		t.Fatalf("export onto a dump: exit %d, %s", code, stderr.String())
	}
}

// TestImportInterruptedOnStandardInput: a signal stops an import whose standard input waits on
// its writer, without waiting for the writer to close it.
func TestImportInterruptedOnStandardInput(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	go w.Write([]byte(laureltest.DumpHeader + "\n")) // then nothing, and no end
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	dir := filepath.Join(t.TempDir(), "new")
	err := runImport(ctx, []string{"-data", dir}, r, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "interrupted while reading the dump; nothing was imported") || time.Since(start) > 2*time.Second {
		t.Fatalf("after %v: %v; want interrupted at once", time.Since(start), err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the interrupted import left %s: %v", dir, err)
	}
}
