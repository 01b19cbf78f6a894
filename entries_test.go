package laurel_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/laurel/laurel"
	"github.com/laurel/laurel/embedded"
)

// BenchmarkTournamentsSubmit measures what laurel.Competitions adds to a submit of 100 events
// on a board that is no tournament (every board's cost: a read of the board's configuration),
// against the store's own submit, in one run.
func BenchmarkTournamentsSubmit(b *testing.B) {
	s, err := embedded.Open(b.TempDir(), embedded.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if _, _, err := s.PutBoard(ctx, "b", laurel.BoardSpec{Windows: []string{"all", "week", "day", "last7d"}}); err != nil {
		b.Fatal(err)
	}
	batch := make([]laurel.Event, 100)
	for _, c := range []struct {
		name string
		svc  laurel.Service
	}{{"store", s}, {"tournaments", laurel.NewCompetitions(s, s, nil)}} {
		svc := c.svc
		b.Run(c.name, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				for j := range batch {
					batch[j] = laurel.Event{Board: "b", Member: fmt.Sprintf("m%d", (i*100+j)%100_000), Value: 1}
				}
				if _, err := svc.Submit(ctx, batch, laurel.SubmitOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
