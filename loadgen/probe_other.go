//go:build !unix

package loadgen

import "net"

// peekIdle cannot look at a socket without reading it here: a connection the server
// closed is found when the request fails on it, and resent (RawTransport's rule).
func peekIdle(net.Conn) (stale, ok bool) { return false, false }
