//go:build unix

package h1

import (
	"errors"
	"syscall"
)

// open reports whether the server has left the idle connection open: nothing is waiting to
// be read on it (neither data nor the end of the stream). It peeks without blocking, in one
// system call.
func (c *conn) open() bool {
	if c.br.Buffered() > 0 {
		return false
	}
	sc, ok := c.raw.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	open := false
	var buf [1]byte
	err = rc.Read(func(fd uintptr) bool {
		// Data or the end of the stream (n >= 0) both mean the connection cannot carry a
		// request; only "nothing yet" does.
		_, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		open = errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK)
		return true
	})
	return err == nil && open
}
