package laurel_test

import (
	"errors"
	"testing"

	"github.com/laurel/laurel"
)

// TestSubscoreConfig: a board declares its subscore's order at creation, shows it in its spec,
// and keeps it: any change, its removal or its addition is a conflict; a bad order is 400.
func TestSubscoreConfig(t *testing.T) {
	asc := "asc"
	b, err := (&laurel.BoardSpec{Order: ptr("desc"), Subscore: &asc}).Apply("race", nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	if b.Subscore == nil || *b.Subscore != laurel.Asc {
		t.Fatalf("subscore %v, want asc", b.Subscore)
	}
	if o := b.Ordering(); o != (laurel.Ordering{Score: laurel.Desc, Sub: laurel.Asc, HasSub: true}) {
		t.Fatalf("Ordering() = %+v", o)
	}
	back, err := b.Record().Board("race")
	if err != nil || back.Subscore == nil || *back.Subscore != laurel.Asc {
		t.Fatalf("the stored record gives back %v, %v", back.Subscore, err)
	}
	for _, change := range []string{"desc", ""} {
		if _, err := (&laurel.BoardSpec{Subscore: ptr(change)}).Apply("race", &b, 2); laurel.ErrorCode(err) != laurel.EConflict || errorField(err) != "subscore" {
			t.Errorf("changing the subscore to %q: %v, want conflict on subscore", change, err)
		}
	}
	if _, err := (&laurel.BoardSpec{Subscore: ptr("asc"), Title: ptr("t")}).Apply("race", &b, 2); err != nil {
		t.Errorf("an update that repeats the subscore: %v", err)
	}
	plain, _ := (&laurel.BoardSpec{}).Apply("plain", nil, 1)
	if plain.Subscore != nil || plain.Spec().Subscore != nil || plain.Ordering().HasSub {
		t.Fatalf("a board created without a subscore has one: %+v", plain.Spec().Subscore)
	}
	if _, err := (&laurel.BoardSpec{Subscore: ptr("asc")}).Apply("plain", &plain, 2); laurel.ErrorCode(err) != laurel.EConflict {
		t.Errorf("adding a subscore to a board: %v, want conflict", err)
	}
	if _, err := (&laurel.BoardSpec{Subscore: ptr("up")}).Apply("x", nil, 1); laurel.ErrorCode(err) != laurel.EInvalid || errorField(err) != "subscore" {
		t.Errorf("subscore \"up\": %v, want invalid_argument on subscore", err)
	}
}

// TestSubscoreAdmission: a subscore sent to a board without one is refused before its id is
// looked at; an id retried with another subscore does not repeat its event.
func TestSubscoreAdmission(t *testing.T) {
	plain, _ := (&laurel.BoardSpec{}).Apply("plain", nil, 1)
	ev := laurel.Event{Board: "plain", Member: "ada", Value: 3, HasSub: true}
	if err := plain.AdmitWriter(&ev, laurel.SubmitOptions{}); laurel.ErrorCode(err) != laurel.EInvalid || errorField(err) != "subscore" {
		t.Errorf("a subscore of 0 on a board without one: %v, want invalid_argument on subscore", err)
	}
	race, _ := (&laurel.BoardSpec{Subscore: ptr("desc")}).Apply("race", nil, 1)
	ev.Board, ev.Sub = "race", 2
	if err := race.AdmitWriter(&ev, laurel.SubmitOptions{}); err != nil {
		t.Errorf("a subscore on a board with one: %v", err)
	}
	if ev.Repeats("ada", 3, 1, 0) || !ev.Repeats("ada", 3, 2, 0) {
		t.Error("Repeats ignores the subscore")
	}
}

// errorField is the field an error names, "" for none.
func errorField(err error) string {
	var le *laurel.Error
	if errors.As(err, &le) {
		return le.Field
	}
	return ""
}
