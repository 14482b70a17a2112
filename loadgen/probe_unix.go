//go:build unix

package loadgen

import (
	"net"
	"syscall"
)

// peekIdle reports whether the server has closed c or sent bytes on it while it sat idle,
// with one recv(2) that neither waits nor consumes anything (MSG_PEEK|MSG_DONTWAIT). net's
// own non-blocking idiom, a read deadline already past, fails the read before any
// syscall, so it cannot see a close. ok is false when c has no file descriptor.
func peekIdle(c net.Conn) (stale, ok bool) {
	sc, isSC := c.(syscall.Conn)
	if !isSC {
		return false, false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false, false
	}
	var b [1]byte
	var rerr error
	if err := rc.Read(func(fd uintptr) bool {
		_, _, rerr = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return true // never wait for readiness
	}); err != nil {
		return true, true
	}
	// Only EAGAIN says the connection is open and quiet: a byte read is one nobody asked
	// for, no byte and no error is the server's FIN, any other error a broken connection.
	return rerr != syscall.EAGAIN && rerr != syscall.EWOULDBLOCK, true
}
