package laurel_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/laurel/laurel"
)

func str(s string) *string { return &s }

func TestBoardDefaults(t *testing.T) {
	var spec laurel.BoardSpec
	b, err := spec.Apply("solvers", nil, 1234)
	if err != nil {
		t.Fatal(err)
	}
	if b.ID != "solvers" || b.Order != laurel.Desc || b.Mode != laurel.Sum || len(b.Windows) != 1 ||
		b.Windows[0].String() != "all" || b.Timezone != "UTC" || b.WeekStart != time.Monday ||
		b.LateLimit != 24*time.Hour || b.Keep != 12 || b.MinValue != nil || b.MaxValue != nil ||
		string(b.Metadata) != "{}" || b.CreatedAt != 1234 {
		t.Fatalf("defaults differ from docs/design.md: %+v", b)
	}
}

func TestBoardSpecValidation(t *testing.T) {
	for _, tc := range []struct {
		name, id, body, code, field string
	}{
		{"bad id", "Solvers", `{}`, laurel.EInvalid, "board"},
		{"id too long", strings.Repeat("a", 65), `{}`, laurel.EInvalid, "board"},
		{"id starts with dash", "-a", `{}`, laurel.EInvalid, "board"},
		{"order", "b", `{"order":"up"}`, laurel.EInvalid, "order"},
		{"mode", "b", `{"mode":"max"}`, laurel.EInvalid, "mode"},
		{"no windows", "b", `{"windows":[]}`, laurel.EInvalid, "windows"},
		{"nine windows", "b", `{"windows":["all","hour","day","week","month","year","last7d","last1h","last2d"]}`, laurel.EInvalid, "windows"},
		{"unknown window", "b", `{"windows":["all","fortnight"]}`, laurel.EInvalid, "windows[1]"},
		{"window twice", "b", `{"windows":["week","week"]}`, laurel.EInvalid, "windows[1]"},
		{"timezone", "b", `{"timezone":"Mars/Olympus"}`, laurel.EInvalid, "timezone"},
		{"local timezone", "b", `{"timezone":"Local"}`, laurel.EInvalid, "timezone"},
		{"week start", "b", `{"week_start":"funday"}`, laurel.EInvalid, "week_start"},
		{"late limit", "b", `{"late_limit":"soon"}`, laurel.EInvalid, "late_limit"},
		{"late limit too long", "b", `{"late_limit":"400d"}`, laurel.EInvalid, "late_limit"},
		{"keep", "b", `{"keep":-1}`, laurel.EInvalid, "keep"},
		{"bounds", "b", `{"min_value":5,"max_value":4}`, laurel.EInvalid, "min_value"},
		{"metadata array", "b", `{"metadata":[1]}`, laurel.EInvalid, "metadata"},
		{"metadata too big", "b", `{"metadata":{"x":"` + strings.Repeat("a", 4096) + `"}}`, laurel.EInvalid, "metadata"},
		{"title control", "b", `{"title":"a\u0007b"}`, laurel.EInvalid, "title"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var spec laurel.BoardSpec
			if err := json.Unmarshal([]byte(tc.body), &spec); err != nil {
				t.Fatal(err)
			}
			_, err := spec.Apply(tc.id, nil, 0)
			var e *laurel.Error
			if !asError(err, &e) || e.Code != tc.code || e.Field != tc.field {
				t.Fatalf("Apply(%s) = %v; want code %s on field %s", tc.body, err, tc.code, tc.field)
			}
		})
	}
}

func TestBoardUpdate(t *testing.T) {
	create := laurel.BoardSpec{Order: str("asc"), Mode: str("best"), Windows: []string{"all", "week"},
		Timezone: str("Europe/Berlin"), WeekStart: str("sunday"), LateLimit: str("1h")}
	b, err := create.Apply("race", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Restating the immutable fields with their values is fine; changing one is a conflict.
	for _, tc := range []struct {
		spec  laurel.BoardSpec
		field string
	}{
		{laurel.BoardSpec{Order: str("desc")}, "order"},
		{laurel.BoardSpec{Mode: str("sum")}, "mode"},
		{laurel.BoardSpec{Timezone: str("UTC")}, "timezone"},
		{laurel.BoardSpec{WeekStart: str("monday")}, "week_start"},
		{laurel.BoardSpec{Windows: []string{"all"}}, "windows"},
	} {
		_, err := tc.spec.Apply("race", &b, 0)
		var e *laurel.Error
		if !asError(err, &e) || e.Code != laurel.EConflict || e.Field != tc.field {
			t.Errorf("changing %s: %v, want a conflict", tc.field, err)
		}
	}
	same := create
	if _, err := same.Apply("race", &b, 0); err != nil {
		t.Fatalf("restating the board: %v", err)
	}
	// Mutable fields change; missing fields keep their values; windows may be added.
	upd := laurel.BoardSpec{LateLimit: str("7d"), Keep: ptr(3), Windows: []string{"week", "all", "last7d"}, Title: str("Race")}
	nb, err := upd.Apply("race", &b, 99)
	if err != nil {
		t.Fatal(err)
	}
	if nb.LateLimit != 7*24*time.Hour || nb.Keep != 3 || len(nb.Windows) != 3 || nb.Title != "Race" ||
		nb.Order != laurel.Asc || nb.Timezone != "Europe/Berlin" || nb.CreatedAt != 0 {
		t.Fatalf("updated board: %+v", nb)
	}
	if len(b.Windows) != 2 {
		t.Fatal("Apply modified the current board's windows")
	}
}

func ptr[T any](v T) *T { return &v }

// A board's Spec, applied to no board, gives the board back: the store and the API rely on it.
func TestBoardSpecRoundTrip(t *testing.T) {
	spec := laurel.BoardSpec{Order: ptr("asc"), Mode: ptr("best"), Windows: []string{"week", "all", "last3h"},
		Timezone: ptr("America/New_York"), WeekStart: ptr("sunday"), LateLimit: ptr("90s"), Keep: ptr(0),
		MinValue: ptr(int64(-5)), Title: ptr("Fastest"), Metadata: json.RawMessage(`{"a": 1}`)}
	b, err := spec.Apply("laps", nil, 1234)
	if err != nil {
		t.Fatal(err)
	}
	back := b.Spec()
	again, err := back.Apply("laps", nil, 1234)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(b, again) {
		t.Fatalf("round trip:\n%+v\n%+v", b, again)
	}
	if got, _ := json.Marshal(b.Spec()); string(got) != `{"order":"asc","mode":"best","windows":["week","all","last3h"],"timezone":"America/New_York","week_start":"sunday","late_limit":"90s","keep":0,"min_value":-5,"title":"Fastest","metadata":{"a":1}}` {
		t.Fatalf("Spec as JSON: %s", got)
	}
}
