package laurel_test

import (
	"errors"

	"github.com/laurel/laurel"
)

func asError(err error, target **laurel.Error) bool { return errors.As(err, target) }
