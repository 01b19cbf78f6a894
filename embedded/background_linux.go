package embedded

import "syscall"

// lowerThread sets the calling thread's nice value (on Linux, setpriority of a thread id
// ranks that thread alone). Raising one's own nice needs no privilege; should it fail, the
// thread runs at the process's rank, as before.
func lowerThread(nice int) { _ = syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), nice) }
