package hostile

import (
	"bytes"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/pel-ladder/pel/internal/pelbin"
)

// OTLP bodies of 4 MiB of empty spans, four at once (the receiver's concurrency): an empty
// span is 2-3 bytes on the wire and hundreds decoded (1.84 GB unbounded, answered 200). A
// body is counted before it is decoded and refused with 413 past otlp.MaxBodyObjects; the
// run goes on and keeps its records.
func TestOTLPEmptySpans(t *testing.T) {
	addr := pelbin.FreeAddr(t)
	js := `{"resourceSpans":[{"scopeSpans":[{"spans":[{}` + strings.Repeat(",{}", (4<<20-64)/3) + `]}]}]}`
	// protobuf: TracesData{resource_spans: [{scope_spans: [{spans: [empty × N]}]}]}
	var scope []byte
	for range (4<<20 - 64) / 2 {
		scope = append(scope, 2<<3|2, 0) // ScopeSpans.spans: an empty Span
	}
	rs := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), scope)
	pb := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), rs)
	var refused, accepted atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body, ct := []byte(js), "application/json"
			if i%2 == 1 {
				body, ct = pb, "application/x-protobuf"
			}
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := http.Post("http://"+addr+"/v1/traces", ct, bytes.NewReader(body))
				if err != nil {
					time.Sleep(20 * time.Millisecond)
					continue
				}
				resp.Body.Close()
				switch resp.StatusCode {
				case http.StatusRequestEntityTooLarge:
					refused.Add(1)
				case http.StatusOK:
					accepted.Add(1)
				}
			}
		}()
	}
	target := api(t, okStream)
	d, to := 4*time.Second, 5*time.Second
	res, dir := run(t, target, contractYAML(4, d, to, ""), d, to, "--otlp", addr)
	close(stop)
	wg.Wait()
	t.Logf("%d bodies refused, %d accepted", refused.Load(), accepted.Load())
	if res.code != 0 {
		t.Errorf("exit %d: %s", res.code, tail(res.stderr))
	}
	records(t, dir)
	if refused.Load() == 0 || accepted.Load() != 0 {
		t.Errorf("%d bodies of empty spans refused, %d accepted: want every one refused", refused.Load(), accepted.Load())
	}
}
