package store

import (
	"os"

	"golang.org/x/sys/windows"
)

// errLocked is what tryLock returns while another process holds the lock.
var errLocked = windows.ERROR_LOCK_VIOLATION

// tryLock takes an exclusive lock on one byte of f without waiting. The
// byte lies past the holder's pid: Windows locks are mandatory, and a
// waiting process reads the pid for its message.
func tryLock(f *os.File) error {
	return windows.LockFileEx(windows.Handle(f.Fd()),
		windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &windows.Overlapped{Offset: 1 << 30})
}
