//go:build !linux

package store

// lowerThreadPriority does nothing where a thread's priority cannot be set
// apart from its process's (IndexAtLowPriority).
func lowerThreadPriority() {}
