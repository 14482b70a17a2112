package loadgen

import (
	"bufio"
	"net/http"
)

// readFinalResponse reads the response to req from br, skipping interim responses.
//
// RFC 9110 §15.2: a client must be able to parse one or more 1xx responses before the final
// response, even one it did not expect (100 Continue although pel sends no Expect header,
// 103 Early Hints from a CDN or proxy), and may ignore them. http.ReadResponse returns each
// one as a response of its own, and net/http's Transport loops over them itself
// (persistConn.readResponse); RawTransport calls ReadResponse directly, so it loops here.
// 101 Switching Protocols is final (pel never asks to upgrade; the caller reports it as an
// HTTP error). Every interim response's bytes count against the connection's header bound
// (MaxResponseHeaderBytes, enforced by limitConn), as net/http counts them against its
// own, so an endless run of 103s ends in errHeaderTooLong.
func readFinalResponse(br *bufio.Reader, req *http.Request) (*http.Response, error) {
	for {
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode == http.StatusSwitchingProtocols {
			resp.Close = true // the connection now speaks another protocol: never reused
			return resp, nil
		}
		if resp.StatusCode < 100 || resp.StatusCode > 199 {
			return resp, nil
		}
		// A 1xx has no body (ReadResponse gives it NoBody); nothing to drain.
	}
}
