package http

import (
	"context"
	"encoding/json"
	"github.com/laurel/laurel/http/internal/wire"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/laurel/laurel"
)

// benchPage is a top-100 page with names, as `laurel bench` reads it.
func benchPage(n int) laurel.Page {
	p := laurel.Page{Board: "bench", Window: "all", Period: laurel.PeriodInfo{ID: "all"}, Total: 1000000}
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC).UnixMilli()
	for i := range n {
		m := 1 + i*7919%1000000
		p.Entries = append(p.Entries, laurel.Entry{Rank: i + 1, Member: "player-" + strconv.Itoa(m),
			Score: int64(50000 - 37*i), ReachedAt: at - int64(i)*61237, Name: "Player " + strconv.Itoa(m)})
	}
	return p
}

// benchResults is the answer to a batch of 100 events on a board of four windows.
func benchResults(n int) []laurel.EventResult {
	out := make([]laurel.EventResult, n)
	for i := range out {
		out[i] = laurel.EventResult{Board: "bench", Member: "player-" + strconv.Itoa(i*7919), ID: "run-" + strconv.Itoa(i),
			Status: laurel.StatusApplied, Entries: map[string]laurel.Standing{
				"all": {Rank: 10 + i, Score: 500}, "week": {Rank: 3 + i, Score: 90}, "day": {Rank: i + 1, Score: 12}, "last7d": {Rank: 5 + i, Score: 80}}}
	}
	return out
}

// compare runs the encoding/json encoder and then the appender as sub-benchmarks, and
// reports on the appender's line how many times slower encoding/json was in the same run
// (json/appender).
func compare(b *testing.B, viaJSON func() []byte, appender func([]byte) []byte) {
	var jsonNs float64
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			viaJSON()
		}
		jsonNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	b.Run("appender", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			bp := getBuf()
			putBuf(bp, appender((*bp)[:0]))
		}
		if ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N); jsonNs > 0 && ns > 0 {
			b.ReportMetric(jsonNs/ns, "json/appender")
		}
	})
}

// BenchmarkEncodePage: a 100-entry page with names, as writeJSON(pageOf(p)) encoded it
// (with its newline) and as writePage does.
func BenchmarkEncodePage(b *testing.B) {
	p := benchPage(100)
	compare(b, func() []byte {
		out, _ := json.Marshal(pageOf(p))
		return append(out, '\n')
	}, func(dst []byte) []byte {
		dst, _ = wire.EncodePage(dst, p)
		return append(dst, '\n')
	})
}

// BenchmarkEncodeResults: the answer to a batch of 100 events on four windows.
func BenchmarkEncodeResults(b *testing.B) {
	results := benchResults(100)
	compare(b, func() []byte {
		out, _ := json.Marshal(resultsOf(results, true, nil))
		return append(out, '\n')
	}, func(dst []byte) []byte {
		return append(wire.AppendResults(dst, results, true, nil), '\n')
	})
}

// pageService answers every page read with the same page, so that a benchmark measures
// the HTTP layer alone. Its other methods are not called.
type pageService struct {
	laurel.Service
	page laurel.Page
}

func (s pageService) Page(ctx context.Context, q laurel.Query, offset, limit int, r laurel.ScoreRange) (laurel.Page, error) {
	return s.page, nil
}

// BenchmarkTop100 reads a top-100 page with names through the whole server: "handler"
// calls its handler directly (what a request costs the server), "loopback" over TCP with a
// Go client (the client's decoding excluded: the body is only read).
func BenchmarkTop100(b *testing.B) {
	s := NewServer(pageService{page: benchPage(100)}, Config{})
	h := s.Handler()
	const path = "/v1/boards/bench/entries?limit=100"
	b.Run("handler", func(b *testing.B) {
		b.ReportAllocs()
		req := httptest.NewRequest("GET", path, nil)
		for b.Loop() {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != http.StatusOK {
				b.Fatalf("status %d: %s", w.Code, w.Body)
			}
		}
	})
	b.Run("loopback", func(b *testing.B) {
		b.ReportAllocs()
		srv := httptest.NewServer(h)
		defer srv.Close()
		client := srv.Client()
		for b.Loop() {
			resp, err := client.Get(srv.URL + path)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
	})
}
