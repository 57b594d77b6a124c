package store

import (
	"runtime"
	"syscall"
)

// lowerThreadPriority keeps the calling goroutine on its OS thread for
// good (the thread ends with the goroutine, so no other goroutine ever
// runs at its priority) and gives that thread a low CPU priority, nice
// threadNice. A failure leaves the priority as it was.
func lowerThreadPriority() {
	runtime.LockOSThread()
	_ = syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), threadNice)
}
