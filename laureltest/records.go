package laureltest

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"

	"github.com/laurel/laurel"
)

// Records checks a store's laurel.Records against the interface's contract: reads, listing
// by prefix and page, swaps that succeed only over the value stored, deletes, bad keys, and
// swaps racing on one key that must add up (no lost update).
func Records(t *testing.T, r laurel.Records) {
	ctx := context.Background()
	if _, err := r.Record(ctx, "k", "missing"); laurel.ErrorCode(err) != laurel.ENotFound {
		t.Fatalf("Record of a missing key: %v, want %s", err, laurel.ENotFound)
	}
	swap := func(kind, key string, old, new []byte, want bool) {
		t.Helper()
		ok, err := r.SwapRecord(ctx, kind, key, old, new)
		if err != nil || ok != want {
			t.Fatalf("SwapRecord(%s, %s, %q → %q) = %v, %v; want %v", kind, key, old, new, ok, err, want)
		}
	}
	get := func(kind, key, want string) {
		t.Helper()
		v, err := r.Record(ctx, kind, key)
		if err != nil || string(v) != want {
			t.Fatalf("Record(%s, %s) = %q, %v; want %q", kind, key, v, err, want)
		}
	}
	swap("k", "a/1", nil, []byte("one"), true)
	swap("k", "a/1", nil, []byte("again"), false) // exists already
	get("k", "a/1", "one")
	swap("k", "a/1", []byte("two"), []byte("x"), false) // not what is stored
	swap("k", "a/1", []byte("one"), []byte("two"), true)
	get("k", "a/1", "two")
	swap("k", "a/1", []byte("two"), []byte{}, true) // an empty value is a value
	get("k", "a/1", "")
	swap("k", "a/1", nil, []byte("y"), false)
	swap("k", "a/1", []byte{}, nil, true) // deleted
	if _, err := r.Record(ctx, "k", "a/1"); laurel.ErrorCode(err) != laurel.ENotFound {
		t.Fatalf("Record after delete: %v", err)
	}
	swap("k", "a/1", []byte("gone"), nil, false)

	for _, key := range []string{"b/2", "a/3", "a/1", "a/2", "ab", "b"} {
		swap("k", key, nil, []byte("v"+key), true)
	}
	swap("other", "a/9", nil, []byte("elsewhere"), true)
	list := func(prefix, after string, limit int, want ...string) {
		t.Helper()
		recs, err := r.Records(ctx, "k", prefix, after, limit)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, rec := range recs {
			if string(rec.Value) != "v"+rec.Key {
				t.Fatalf("Records: %s holds %q", rec.Key, rec.Value)
			}
			got = append(got, rec.Key)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("Records(k, %q, after %q, %d) = %q, want %q", prefix, after, limit, got, want)
		}
	}
	list("a/", "", 10, "a/1", "a/2", "a/3")
	list("a/", "", 2, "a/1", "a/2")
	list("a/", "a/2", 10, "a/3")
	list("a", "", 10, "a/1", "a/2", "a/3", "ab")
	list("", "", 10, "a/1", "a/2", "a/3", "ab", "b", "b/2")
	list("", "ab", 10, "b", "b/2")
	list("c", "", 10)

	for _, bad := range []string{"", "a\x00b", "\xff"} {
		if _, err := r.SwapRecord(ctx, "k", bad, nil, []byte("x")); laurel.ErrorCode(err) != laurel.EInvalid {
			t.Errorf("SwapRecord with key %q: %v, want %s", bad, err, laurel.EInvalid)
		}
	}

	// Racing read-modify-swap loops on one counter: every increment that a swap reported
	// done is counted once.
	const workers, each = 4, 25
	swap("k", "counter", nil, binary.BigEndian.AppendUint64(nil, 0), true)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done, tries := 0, 0; done < each; tries++ {
				if tries > 100*each {
					errs <- fmt.Errorf("no progress after %d tries", tries)
					return
				}
				old, err := r.Record(ctx, "k", "counter")
				if err != nil {
					errs <- err
					return
				}
				next := binary.BigEndian.AppendUint64(nil, binary.BigEndian.Uint64(old)+1)
				ok, err := r.SwapRecord(ctx, "k", "counter", old, next)
				if err != nil {
					errs <- err
					return
				}
				if ok {
					done++
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	v, err := r.Record(ctx, "k", "counter")
	if err != nil || binary.BigEndian.Uint64(v) != workers*each {
		t.Fatalf("counter after %d swaps = %v, %v", workers*each, v, err)
	}
}
