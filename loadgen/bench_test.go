package loadgen

import (
	"bytes"
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/loadgen/loadgentest"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/workload"
)

// BenchmarkSSE: parsing a typical OpenAI stream (role delta, 16 content chunks, usage, DONE).
func BenchmarkSSE(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n")
	for i := 0; i < 16; i++ {
		sb.WriteString("data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" word\"},\"finish_reason\":null}]}\n\n")
	}
	sb.WriteString("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":16}}\n\ndata: [DONE]\n\n")
	in := []byte(sb.String())
	b.SetBytes(int64(len(in)))
	r := NewSSEReader(bytes.NewReader(in), 512, 0)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		r.Reset(bytes.NewReader(in))
		n := 0
		for {
			if _, err := r.Next(); err != nil {
				break
			}
			n++
		}
		if n != 19 {
			b.Fatal(n)
		}
	}
}

// BenchmarkClientStream: one full streamed request (4 tokens) over loopback, including the
// server's share of the CPU (it runs in this process).
func BenchmarkClientStream(b *testing.B) {
	srv := httptest.NewServer(&loadgentest.Handler{Plan: func(loadgentest.Request) loadgentest.Behavior {
		return loadgentest.Behavior{Tokens: 4}
	}})
	defer srv.Close()
	c := NewClient(ClientConfig{BaseURL: srv.URL, Model: "m"})
	req := &workload.Request{MaxTokens: 4, Messages: []workload.Message{{Role: "user", Content: "hello"}}}
	body, _ := c.Body(req)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var rec record.Record
		for pb.Next() {
			rec.ID = "x"
			c.Do(context.Background(), req, body, &rec, "00-00000000000000000000000000000001-0000000000000001-01")
			if rec.Status != record.StatusOK || rec.OutputTokens != 4 {
				b.Fatal(rec.Status, rec.Error)
			}
		}
	})
}
