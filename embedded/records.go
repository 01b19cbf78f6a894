package embedded

import (
	"bytes"
	"context"
	"errors"

	"github.com/cockroachdb/pebble/v2"
	"github.com/laurel/laurel"
)

// The store's laurel.Records live beside the boards under their own tag, O kind 0 key, and
// are written by the caller's goroutine, not the writer's: they are few, each swap is its own
// synced Pebble write, and recMu orders the swaps (and keeps them off a closed store).

func recordKey(kind, key string) []byte { return append(prefix(tagRecord, kind), key...) }

// Record returns the value stored under (kind, key) (laurel.Records).
func (s *Store) Record(ctx context.Context, kind, key string) ([]byte, error) {
	if err := validateRecord(kind, key); err != nil {
		return nil, err
	}
	s.recMu.RLock()
	defer s.recMu.RUnlock()
	if s.recClosed {
		return nil, errClosed
	}
	v, err := s.record(recordKey(kind, key))
	if err == nil && v == nil {
		return nil, laurel.Errorf(laurel.ENotFound, "no %s %q", kind, key)
	}
	return v, err
}

// Records lists the records of kind under prefix after after (laurel.Records).
func (s *Store) Records(ctx context.Context, kind, keyPrefix, after string, limit int) ([]laurel.Record, error) {
	if err := laurel.ValidateRecordKey(kind); err != nil {
		return nil, err
	}
	s.recMu.RLock()
	defer s.recMu.RUnlock()
	if s.recClosed {
		return nil, errClosed
	}
	p := prefix(tagRecord, kind)
	from := append(append([]byte(nil), p...), keyPrefix...)
	if after != "" && after >= keyPrefix {
		from = append(append(append([]byte(nil), p...), after...), 0) // the least key after it
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: from, UpperBound: upper(append(append([]byte(nil), p...), keyPrefix...))})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []laurel.Record
	for ok := it.First(); ok && len(out) < limit; ok = it.Next() {
		out = append(out, laurel.Record{Key: string(it.Key()[len(p):]), Value: bytes.Clone(it.Value())})
	}
	return out, it.Error()
}

// SwapRecord stores new under (kind, key) if old is stored there (laurel.Records).
func (s *Store) SwapRecord(ctx context.Context, kind, key string, old, new []byte) (bool, error) {
	if err := validateRecord(kind, key); err != nil {
		return false, err
	}
	s.recMu.Lock()
	defer s.recMu.Unlock()
	switch {
	case s.recClosed:
		return false, errClosed
	case s.broken():
		return false, s.failedError()
	case s.disk.full():
		return false, s.disk.refusal()
	}
	k := recordKey(kind, key)
	cur, err := s.record(k)
	if err != nil {
		return false, err
	}
	if (old == nil) != (cur == nil) || !bytes.Equal(old, cur) {
		return false, nil
	}
	if new == nil {
		err = s.db.Delete(k, pebble.Sync)
	} else {
		err = s.db.Set(k, new, pebble.Sync)
	}
	return err == nil, err
}

// record reads the newest value under k: nil when there is none.
func (s *Store) record(k []byte) ([]byte, error) {
	v, closer, err := s.db.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	return bytes.Clone(v), nil
}

func validateRecord(kind, key string) error {
	if err := laurel.ValidateRecordKey(kind); err != nil {
		return err
	}
	return laurel.ValidateRecordKey(key)
}
