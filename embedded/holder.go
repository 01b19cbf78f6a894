package embedded

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// A data directory serves one laurel at a time: Pebble locks it. So that a second one can say
// who holds it, the holder writes its process id beside the lock.

const holderFile = "laurel.pid"

// noteHolder records this process as the directory's holder; it is only ever read to explain
// a refusal, so failing to write it is no error.
func noteHolder(fs vfs.FS, dir string) {
	f, err := fs.Create(fs.PathJoin(dir, holderFile), vfs.WriteCategoryUnspecified)
	if err != nil {
		return
	}
	f.Write([]byte(strconv.Itoa(os.Getpid()) + "\n"))
	f.Close()
}

// dropHolder removes the holder's note, as a store closes cleanly (while it still holds the
// lock): a directory no one serves names no process. A crash leaves the note, which the next
// holder writes over.
func dropHolder(fs vfs.FS, dir string) {
	fs.Remove(fs.PathJoin(dir, holderFile))
}

// heldError explains a failure to open dir: plainly, when another laurel holds it.
func heldError(fs vfs.FS, dir string, err error) error {
	if errors.As(err, new(*DiskFullError)) {
		return err // it names the directory
	}
	if !errors.Is(err, syscall.EAGAIN) && !strings.Contains(err.Error(), "lock held") {
		return fmt.Errorf("embedded: open %s: %w", dir, err)
	}
	who := "another laurel"
	if f, ferr := fs.Open(fs.PathJoin(dir, holderFile)); ferr == nil {
		b, _ := io.ReadAll(io.LimitReader(f, 32))
		f.Close()
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil && pid > 0 {
			who = fmt.Sprintf("another laurel (process %d)", pid)
		}
	}
	return fmt.Errorf("embedded: the data directory %s is in use by %s: stop it first, or give this one another directory", dir, who)
}
