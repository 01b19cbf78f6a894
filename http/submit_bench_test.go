package http_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/laurel/laurel"
)

// BenchmarkSubmitOverHTTP sends batches of 100 events with ids from 16 clients, as `laurel
// bench` does, to the store (four windows, fsync'd) and to a service that accepts everything
// and does nothing: what the HTTP layer alone carries on this machine. b.N counts batches.
// The ratio of the two events/s, from the same run, is how much room the HTTP layer leaves
// the store (docs/benchmarks.md).
func BenchmarkSubmitOverHTTP(b *testing.B) {
	for _, svc := range []string{"null", "store"} {
		b.Run("service="+svc, func(b *testing.B) {
			o := options{}
			if svc == "null" {
				o.service = nullService{}
			}
			e := start(b, o)
			if svc == "store" {
				spec := laurel.BoardSpec{Windows: []string{"all", "week", "day", "last7d"}}
				if _, _, err := e.store.PutBoard(context.Background(), "b", spec); err != nil {
					b.Fatal(err)
				}
			}
			benchSubmitOverHTTP(b, e.url+"/v1/boards/b/events?ranks=false")
		})
	}
}

func benchSubmitOverHTTP(b *testing.B, url string) {
	const clients, batch = 16, 100
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = clients
	client := &http.Client{Transport: tr}
	defer tr.CloseIdleConnections()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	b.ResetTimer()
	begin := time.Now()
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			z := rand.NewZipf(rand.New(rand.NewSource(int64(c)+1)), 1.1, 1, 99_999)
			var body []byte
			for n := next.Add(1); n <= int64(b.N); n = next.Add(1) {
				body = append(body[:0], `{"events":[`...)
				for i := range batch {
					if i > 0 {
						body = append(body, ',')
					}
					body = fmt.Appendf(body, `{"member":"player-%d","value":1,"id":"%d-%d"}`, z.Uint64(), n, i)
				}
				body = append(body, "]}"...)
				resp, err := client.Post(url, "application/json", bytes.NewReader(body))
				if err != nil {
					errs <- err
					return
				}
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err == nil && resp.StatusCode != http.StatusOK {
					err = fmt.Errorf("status %s", resp.Status)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	took := time.Since(begin)
	b.StopTimer()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N*batch)/took.Seconds(), "events/s")
}

// nullService accepts every submit and does nothing else.
type nullService struct{ laurel.Service }

func (nullService) Submit(_ context.Context, events []laurel.Event, _ laurel.SubmitOptions) ([]laurel.EventResult, error) {
	res := make([]laurel.EventResult, len(events))
	for i, ev := range events {
		res[i] = laurel.EventResult{Board: ev.Board, Member: ev.Member, ID: ev.ID, Status: laurel.StatusApplied}
	}
	return res, nil
}
