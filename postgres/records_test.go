package postgres_test

import (
	"testing"

	"github.com/laurel/laurel/laureltest"
)

func TestRecords(t *testing.T) {
	s := laureltest.NewScaleOutStore(t)
	laureltest.Records(t, s.Open(t, nil))
}
