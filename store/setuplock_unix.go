//go:build unix

package store

import (
	"os"
	"syscall"
)

// errLocked is what tryLock returns while another process holds the lock.
var errLocked = syscall.EWOULDBLOCK

// tryLock takes an exclusive flock on f without waiting.
func tryLock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err != syscall.EINTR {
			return err
		}
	}
}
