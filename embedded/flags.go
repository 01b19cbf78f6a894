package embedded

import (
	"context"

	"github.com/laurel/laurel"
)

// ChangeFlags changes a member's open flags and its hidden mark in one exclusive operation
// (laurel.FlagStore): flags are written by the writer alone, in the holds of submits and
// here, so each reads them as the last commit left them.
func (s *Store) ChangeFlags(ctx context.Context, member string, change func(now int64, open []*laurel.Flag) ([]*laurel.Flag, *bool, error)) error {
	if err := laurel.ValidateMember("member", member); err != nil {
		return err
	}
	return s.do(ctx, &op{exclusive: true, run: func(tx *txn) error {
		var open []*laurel.Flag
		err := laurel.EachRecord(ctx, s, laurel.OpenFlagKind, member+"/", "", func(r laurel.Record) (bool, error) {
			v, err := s.record(recordKey(laurel.FlagKind, string(r.Value)))
			if err != nil || v == nil {
				return err == nil, err
			}
			f, err := laurel.DecodeFlag(v)
			open = append(open, f)
			return err == nil, err
		})
		if err != nil {
			return err
		}
		write, hide, err := change(tx.now, open)
		if err != nil {
			return err
		}
		s.stageFlags(tx, write)
		if hide != nil {
			return s.stageHidden(tx, member, *hide)
		}
		return nil
	}})
}

// stageFlags stages the records of flags in tx.
func (s *Store) stageFlags(tx *txn, flags []*laurel.Flag) {
	for _, f := range flags {
		for _, r := range f.Records(tx.now) {
			if r.Value == nil {
				tx.del(recordKey(r.Kind, r.Key))
			} else {
				tx.set(recordKey(r.Kind, r.Key), r.Value)
			}
		}
	}
}
