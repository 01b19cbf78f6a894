package laurel_test

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/laureltest"
)

// sampleDump writes a small dump with DumpWriter.
func sampleDump(t testing.TB) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := laurel.NewDumpWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	name := "Ada"
	hidden := "eve"
	spec := laurel.BoardSpec{Windows: []string{"all", "day"}}
	for _, r := range []laurel.DumpRecord{
		{Profile: &laurel.DumpProfile{Member: "ada", Name: name}},
		{Hidden: &hidden},
		{Board: &laurel.DumpBoard{ID: "b", Config: spec}},
		{Event: &laurel.DumpEvent{Board: "b", Seq: 1, Member: "ada", Value: 3, TS: 1000, ID: "x"}},
		{Event: &laurel.DumpEvent{Board: "b", Seq: 2, Member: "eve", Value: 5, TS: 2000}},
	} {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestDumpTrailer: a whole dump reads to its end; a dump cut anywhere, with a byte changed
// anywhere, or with anything after its trailer, is refused with invalid_argument.
func TestDumpTrailer(t *testing.T) {
	dump := sampleDump(t)
	d, err := laurel.NewDumpReader(bytes.NewReader(dump))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		_, err := d.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("record %d: %v", n+1, err)
		}
		n++
	}
	if n != 5 || d.Records() != 5 {
		t.Fatalf("read %d records (Records %d), want 5", n, d.Records())
	}
	if _, err := d.Next(); err != io.EOF {
		t.Fatalf("after the end: %v", err)
	}

	refused := func(what string, b []byte) {
		t.Helper()
		_, err := laurel.VerifyDump(bytes.NewReader(b))
		if err == nil || laurel.ErrorCode(err) != laurel.EInvalid {
			t.Fatalf("%s: %v, want invalid_argument", what, err)
		}
	}
	for cut := range len(dump) {
		refused("cut at byte "+itoa(cut), dump[:cut])
	}
	rng := rand.New(rand.NewPCG(laureltest.Seed(t), 8))
	for range 300 {
		b := bytes.Clone(dump)
		i := rng.IntN(len(b))
		b[i] ^= byte(1 + rng.IntN(255))
		refused("byte "+itoa(i)+" changed", b)
	}
	// JSON matches keys regardless of case; the trailer must not.
	refused("a trailer's key in capitals", bytes.Replace(bytes.Clone(dump), []byte(`"records"`), []byte(`"Records"`), 1))
	refused("a space in the trailer", bytes.Replace(bytes.Clone(dump), []byte(`{"end":`), []byte(`{"end": `), 1))
	refused("a record after the trailer", append(bytes.Clone(dump), `{"hidden":"x"}`+"\n"...))
	refused("two trailers", append(bytes.Clone(dump), dump[bytes.LastIndexByte(dump[:len(dump)-1], '\n')+1:]...))
	if boards, err := laurel.VerifyDump(bytes.NewReader(dump)); err != nil || !slices.Equal(boards, []string{"b"}) {
		t.Fatalf("the whole dump: boards %q, %v; want b", boards, err)
	}
	_, err = laurel.VerifyDump(bytes.NewReader(dump[:bytes.LastIndexByte(dump[:len(dump)-1], '\n')+1]))
	if err == nil || !strings.Contains(err.Error(), "without its trailer") {
		t.Fatalf("no trailer: %v", err)
	}
}

// FuzzDumpReader: whatever the input, reading it never panics, and what it accepts it
// accepts whole: as many records as its trailer counts.
func FuzzDumpReader(f *testing.F) {
	f.Add(sampleDump(f))
	f.Add([]byte(`{"laurel_dump":2}` + "\n"))
	f.Add([]byte(`{"laurel_dump":3}` + "\n"))
	f.Add([]byte(`{"laurel_dump":4}` + "\n"))
	f.Add([]byte(`{"laurel_dump":5}` + "\n"))
	f.Add([]byte("hello\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := laurel.NewDumpReader(bytes.NewReader(b))
		if err != nil {
			return
		}
		for {
			_, err := d.Next()
			if errors.Is(err, io.EOF) {
				if !bytes.Contains(b, []byte(`{"end":`)) {
					t.Fatalf("accepted without a trailer: %q", b)
				}
				return
			}
			if err != nil {
				if laurel.ErrorCode(err) == laurel.EInternal {
					t.Fatalf("an error without a code: %v", err)
				}
				return
			}
		}
	})
}

func itoa(i int) string { return strconv.Itoa(i) }
