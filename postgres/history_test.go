package postgres_test

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/laurel/laurel/laureltest"
	"github.com/laurel/laurel/postgres"
)

// TestEncodePoints: a history row's points, written by hand, are the JSON that encoding/json
// writes of the same map, whatever the windows, their order and the numbers.
func TestEncodePoints(t *testing.T) {
	rng := rand.New(rand.NewPCG(laureltest.Seed(t), 0))
	names := []string{"all", "hour", "day", "week", "month", "year", "last7d", "last24h", "last30d", "last1h"}
	numbers := []int64{0, 1, -1, 42, math.MaxInt64, math.MinInt64}
	for range 500 {
		windows := names[:rng.IntN(len(names)+1)]
		rng.Shuffle(len(windows), func(i, j int) { windows[i], windows[j] = windows[j], windows[i] })
		scores, ranks := make([]int64, len(windows)), make([]int, len(windows))
		want := make(map[string][2]int64)
		for i, w := range windows {
			scores[i], ranks[i] = numbers[rng.IntN(len(numbers))], rng.IntN(1_000_000)
			if rng.IntN(2) == 0 {
				scores[i] = rng.Int64() - math.MaxInt64/2
			}
			want[w] = [2]int64{scores[i], int64(ranks[i])}
		}
		raw, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		if got := postgres.EncodePoints(windows, scores, ranks); got != string(raw) {
			t.Fatalf("windows %v: got %s, want %s", windows, got, raw)
		}
	}
}
