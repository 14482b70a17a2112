package loadgen

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/workload"
)

// rawServer answers every request on 127.0.0.1 by writing respond's bytes as they are, on
// a connection kept for the next request.
func rawServer(t *testing.T, respond func(w *bufio.Writer) error) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br, bw := bufio.NewReader(c), bufio.NewWriter(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					if respond(bw) != nil || bw.Flush() != nil {
						return
					}
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

const interimStream = "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n" +
	"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n" +
	"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n"

func finalSSE(w *bufio.Writer) {
	w.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: " + strconv.Itoa(len(interimStream)) + "\r\n\r\n")
	w.WriteString(interimStream)
}

// TestInterimResponses: 1xx responses before the final one are skipped (RFC 9110 §15.2),
// whatever their number and headers, by both the raw transport and net/http's; 101 is
// final; an endless run of 103s ends at the header bound.
func TestInterimResponses(t *testing.T) {
	for _, c := range []struct {
		name    string
		interim string
	}{
		{"100 Continue", "HTTP/1.1 100 Continue\r\n\r\n"},
		{"103 Early Hints", "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload; as=style\r\n\r\n"},
		{"several", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </b>\r\n\r\nHTTP/1.1 199 Misc\r\n\r\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			target := rawServer(t, func(w *bufio.Writer) error {
				w.WriteString(c.interim)
				finalSSE(w)
				return nil
			})
			for _, tr := range []struct {
				name string
				hc   *http.Client
			}{{"raw", DefaultHTTPClient()}, {"net/http", &http.Client{Transport: NewTransport()}}} {
				cl := NewClient(ClientConfig{BaseURL: target, Model: "m", HTTP: tr.hc})
				req := &workload.Request{PromptTokens: 4, MaxTokens: 4, Prompt: "x"}
				body, _ := cl.Body(req)
				for i := range 3 { // the connection stays usable after interim responses
					var rec record.Record
					cl.Do(context.Background(), req, body, &rec, Traceparent([16]byte{1}, [8]byte{1}))
					if rec.Status != record.StatusOK || rec.HTTPStatus != 200 || rec.OutputTokens != 1 || rec.FinishReason != "stop" {
						t.Fatalf("%s request %d: status %q http %d error %q tokens %d", tr.name, i, rec.Status, rec.HTTPStatus, rec.Error, rec.OutputTokens)
					}
				}
			}
		})
	}
	t.Run("101 is final", func(t *testing.T) {
		target := rawServer(t, func(w *bufio.Writer) error {
			w.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
			return nil
		})
		cl := NewClient(ClientConfig{BaseURL: target, Model: "m"})
		req := &workload.Request{PromptTokens: 4, MaxTokens: 4, Prompt: "x"}
		body, _ := cl.Body(req)
		var rec record.Record
		cl.Do(context.Background(), req, body, &rec, Traceparent([16]byte{1}, [8]byte{1}))
		if rec.Status != record.StatusHTTPError || rec.HTTPStatus != 101 {
			t.Fatalf("status %q http %d error %q", rec.Status, rec.HTTPStatus, rec.Error)
		}
	})
	t.Run("endless 103s", func(t *testing.T) {
		target := rawServer(t, func(w *bufio.Writer) error {
			for {
				if _, err := w.WriteString("HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n"); err != nil {
					return err
				}
			}
		})
		req, _ := http.NewRequest(http.MethodPost, target+"/v1/chat/completions", strings.NewReader("{}"))
		_, err := (&RawTransport{}).RoundTrip(req)
		if !errors.Is(err, errHeaderTooLong) {
			t.Fatalf("err = %v, want the header bound", err)
		}
	})
}
