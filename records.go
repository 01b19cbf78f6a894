package laurel

import (
	"context"
	"strings"
	"unicode/utf8"
)

// Records is a small durable table beside the boards, for the state that is not a ranking:
// competitions' entries, cohorts and tiers (package competition), webhooks and their
// deliveries (package webhook). Values are opaque bytes; keys sort bytewise. Every store
// implements it, so the services over it are written once, for every store. Its contract:
//
//   - Record returns the value stored under (kind, key), or an ENotFound error.
//   - Records returns the records of kind whose key begins with prefix and sorts after after
//     ("" for the first), in key order, at most limit (> 0) of them.
//   - SwapRecord stores new under (kind, key) if what is stored there is old, byte for byte,
//     and reports whether it did. A nil old means "nothing is stored", a nil new deletes. A
//     true answer is durable; a false one changed nothing; an error may have done either,
//     and the caller finds out by reading. Swaps of one key are serializable across every
//     process sharing the store.
//
// Kinds and keys are 1 to MaxRecordKey bytes of UTF-8 without a 0x00 byte. A store unavailable
// answers EUnavailable.
type Records interface {
	Record(ctx context.Context, kind, key string) ([]byte, error)
	Records(ctx context.Context, kind, prefix, after string, limit int) ([]Record, error)
	SwapRecord(ctx context.Context, kind, key string, old, new []byte) (bool, error)
}

// Record is one record of a kind.
type Record struct {
	Key   string
	Value []byte
}

// MaxRecordKey bounds the kinds and keys of Records.
const MaxRecordKey = 512

// ValidateRecordKey checks a kind or a key of Records; stores call it before anything else.
func ValidateRecordKey(s string) error {
	if len(s) == 0 || len(s) > MaxRecordKey || strings.IndexByte(s, 0) >= 0 || !utf8.ValidString(s) {
		return Errorf(EInvalid, "a record's kind and key must be 1 to %d bytes of UTF-8 without a NUL", MaxRecordKey)
	}
	return nil
}

// recordsPage is how many records EachRecord reads at a time.
const recordsPage = 500

// EachRecord calls fn with each record of kind under prefix after after ("": from the
// first), in key order, reading them a page at a time, until fn says it wants no more (more
// false) or fails.
func EachRecord(ctx context.Context, rec Records, kind, prefix, after string, fn func(Record) (more bool, err error)) error {
	for {
		recs, err := rec.Records(ctx, kind, prefix, after, recordsPage)
		if err != nil || len(recs) == 0 {
			return err
		}
		for _, r := range recs {
			if more, err := fn(r); err != nil || !more {
				return err
			}
		}
		after = recs[len(recs)-1].Key
	}
}

// DeleteRecords deletes the records of kind under prefix that del selects.
func DeleteRecords(ctx context.Context, rec Records, kind, prefix string, del func(key string) bool) error {
	return EachRecord(ctx, rec, kind, prefix, "", func(r Record) (bool, error) {
		if del(r.Key) {
			_, err := rec.SwapRecord(ctx, kind, r.Key, r.Value, nil)
			return err == nil, err
		}
		return true, nil
	})
}

// DeleteRecord deletes the record (kind, key), whatever it holds; one absent is no error.
func DeleteRecord(ctx context.Context, rec Records, kind, key string) error {
	for {
		v, err := rec.Record(ctx, kind, key)
		if ErrorCode(err) == ENotFound {
			return nil
		}
		if err != nil {
			return err
		}
		if ok, err := rec.SwapRecord(ctx, kind, key, v, nil); err != nil || ok {
			return err
		}
	}
}
