package http_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/laurel/laurel"
)

// BenchmarkSubmitWithStreams measures writes while many streams follow the board: every write
// changes the page they watch. Compare events/s with streams=0 from the same run: the streams
// should cost the writers next to nothing. pages/s counts what the streams received.
func BenchmarkSubmitWithStreams(b *testing.B) {
	for _, n := range []int{0, 2000} {
		b.Run(fmt.Sprintf("streams=%d", n), func(b *testing.B) { benchSubmitWithStreams(b, n) })
	}
}

func benchSubmitWithStreams(b *testing.B, streams int) {
	e := start(b, options{})
	ctx := context.Background()
	if _, _, err := e.store.PutBoard(ctx, "g", laurel.BoardSpec{}); err != nil {
		b.Fatal(err)
	}
	var pages atomic.Int64
	var wg sync.WaitGroup
	host := strings.TrimPrefix(e.url, "http://")
	for range streams {
		conn, err := net.Dial("tcp", host)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { conn.Close() })
		fmt.Fprintf(conn, "GET /v1/boards/g/stream?limit=10 HTTP/1.1\r\nHost: %s\r\n\r\n", host)
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := bufio.NewScanner(conn)
			for sc.Scan() {
				if sc.Text() == "event: page" {
					pages.Add(1)
				}
			}
		}()
	}
	// Wait for every stream's first page.
	for deadline := time.Now().Add(30 * time.Second); pages.Load() < int64(streams); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d streams started", pages.Load(), streams)
		}
	}
	pages0 := pages.Load()
	const writers = 16
	var next atomic.Int64
	b.ResetTimer()
	begin := time.Now()
	var ww sync.WaitGroup
	for w := range writers {
		ww.Add(1)
		go func() {
			defer ww.Done()
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
				ev := laurel.Event{Board: "g", Member: fmt.Sprintf("m%d", (int(i)*7+w)%500), Value: 1}
				if _, err := e.store.Submit(ctx, []laurel.Event{ev}, laurel.SubmitOptions{}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	ww.Wait()
	took := time.Since(begin)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/took.Seconds(), "events/s")
	b.ReportMetric(float64(pages.Load()-pages0)/took.Seconds(), "pages/s")
}
