package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/laurel/laurel"
)

// The store's laurel.Records are rows of laurel_records. A swap is one statement whose WHERE
// clause compares the stored value, so that concurrent swaps of a key from many nodes are
// serialized by the row's lock.

// Record returns the value stored under (kind, key) (laurel.Records).
func (s *Store) Record(ctx context.Context, kind, key string) (v []byte, err error) {
	if err := validateRecord(kind, key); err != nil {
		return nil, err
	}
	err = s.pool.QueryRow(ctx, `SELECT value FROM laurel_records WHERE kind = $1 AND key = $2`, kind, key).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, laurel.Errorf(laurel.ENotFound, "no %s %q", kind, key)
	}
	return v, s.unavailable("read", err)
}

// Records lists the records of kind under prefix after after (laurel.Records).
func (s *Store) Records(ctx context.Context, kind, prefix, after string, limit int) ([]laurel.Record, error) {
	if err := laurel.ValidateRecordKey(kind); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT key, value FROM laurel_records
		WHERE kind = $1 AND starts_with(key, $2) AND key > $3 ORDER BY key LIMIT $4`, kind, prefix, after, limit)
	if err != nil {
		return nil, s.unavailable("read", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (rec laurel.Record, err error) {
		err = r.Scan(&rec.Key, &rec.Value)
		return rec, err
	})
	return out, s.unavailable("read", err)
}

// SwapRecord stores new under (kind, key) if old is stored there (laurel.Records).
func (s *Store) SwapRecord(ctx context.Context, kind, key string, old, new []byte) (bool, error) {
	if err := validateRecord(kind, key); err != nil {
		return false, err
	}
	var sql string
	args := []any{kind, key}
	switch {
	case old == nil && new == nil:
		var n int
		err := s.pool.QueryRow(ctx, `SELECT count(*) FROM laurel_records WHERE kind = $1 AND key = $2`, kind, key).Scan(&n)
		return n == 0, s.unavailable("read", err)
	case old == nil:
		sql, args = `INSERT INTO laurel_records (kind, key, value) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, append(args, new)
	case new == nil:
		sql, args = `DELETE FROM laurel_records WHERE kind = $1 AND key = $2 AND value = $3`, append(args, old)
	default:
		sql, args = `UPDATE laurel_records SET value = $4 WHERE kind = $1 AND key = $2 AND value = $3`, append(args, old, new)
	}
	tag, err := s.pool.Exec(ctx, sql, args...)
	if err != nil {
		return false, s.unavailable("write", err)
	}
	return tag.RowsAffected() == 1, nil
}

func validateRecord(kind, key string) error {
	if err := laurel.ValidateRecordKey(kind); err != nil {
		return err
	}
	return laurel.ValidateRecordKey(key)
}
