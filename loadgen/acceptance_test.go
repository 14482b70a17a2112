package loadgen

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/record"
)

// TestAcceptanceFromWhatArrived: an answer is complete only when the server said why it
// ended and content (or tool calls) arrived; usage that contradicts the stream is flagged
// and the stream's own count kept. Expectations follow from each file's injected fault.
func TestAcceptanceFromWhatArrived(t *testing.T) {
	cases := []struct {
		file, status, class, errHas string
		flags                       []string
		outTok                      int
		tokenSource                 string
	}{
		{file: "finish-error.sse", status: record.StatusStreamError, class: record.ErrFinishError, errHas: `finish_reason "error"`, outTok: 1},
		{file: "finish-abort.sse", status: record.StatusStreamError, class: record.ErrAborted, errHas: `finish_reason "abort"`, outTok: 1},
		{file: "finish-abort.json", status: record.StatusStreamError, class: record.ErrAborted, errHas: `finish_reason "abort"`, outTok: 1},
		{file: "finish-unknown.sse", status: record.StatusStreamError, class: record.ErrNoFinish, errHas: `finish_reason "weird"`, outTok: 1},
		{file: "finish-null.json", status: record.StatusStreamError, class: record.ErrNoFinish, errHas: "no finish_reason", outTok: 1},
		{file: "finish-absent.json", status: record.StatusStreamError, class: record.ErrNoFinish, errHas: "no finish_reason", outTok: 1},
		// No content, usage 16: no output, and the count is the stream's (0), not usage's.
		{file: "empty-usage-16.sse", status: record.StatusInvalid, class: record.ErrInvalid, errHas: "no output",
			flags: []string{record.FlagUsageContradicts}, outTok: 0, tokenSource: record.TokensEstimate},
		{file: "empty-usage-16.json", status: record.StatusInvalid, class: record.ErrInvalid, errHas: "no output",
			flags: []string{record.FlagUsageContradicts}, outTok: 0, tokenSource: record.TokensEstimate},
		// Text arrived, usage says no tokens: the body's own count, 11 characters ~ 3 tokens.
		{file: "text-usage-0.json", status: record.StatusOK,
			flags: []string{record.FlagUsageContradicts}, outTok: 3, tokenSource: record.TokensEstimate},
		// Running usage 32, 64, then a final 1: the running count, 64, stands.
		{file: "usage-running-down.sse", status: record.StatusOK, flags: []string{record.FlagUsageContradicts}, outTok: 64, tokenSource: record.TokensUsage},
		// Three content events, usage 1: each event carried a token at least.
		{file: "usage-below-events.sse", status: record.StatusOK, flags: []string{record.FlagUsageContradicts}, outTok: 3, tokenSource: record.TokensEstimate},
		// The filter withheld the answer: a complete exchange (the contract fails its checks).
		{file: "content-filter.sse", status: record.StatusOK, outTok: 0},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			rec := doFile(t, serveFile(t, c.file, 200).URL, strings.HasSuffix(c.file, ".json"))
			if rec.Status != c.status || rec.ErrorClass != c.class {
				t.Fatalf("status %q class %q (%s), want %q %q", rec.Status, rec.ErrorClass, rec.Error, c.status, c.class)
			}
			if !strings.Contains(rec.Error, c.errHas) {
				t.Errorf("error %q lacks %q", rec.Error, c.errHas)
			}
			if !slices.Equal(rec.Flags, c.flags) {
				t.Errorf("flags %v, want %v", rec.Flags, c.flags)
			}
			if rec.OutputTokens != c.outTok {
				t.Errorf("output tokens %d, want %d", rec.OutputTokens, c.outTok)
			}
			if c.tokenSource != "" && rec.TokenSource != c.tokenSource {
				t.Errorf("token source %q, want %q", rec.TokenSource, c.tokenSource)
			}
		})
	}
}

// TestNotStreamedTTFT: a server that ignores "stream": true and answers one JSON body gives
// the client its first usable token with that body: TTFT is the body's arrival, the record
// says it was not streamed, and there is no TPOT (every token arrived at once).
func TestNotStreamedTTFT(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "responses", "ok.json"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		w.(http.Flusher).Flush() // headers first: the body is what carries the tokens
		w.Write(b)
	}))
	defer srv.Close()
	rec := doFile(t, srv.URL, false) // pel asks for a stream
	if rec.Status != record.StatusOK || !rec.HasFlag(record.FlagNotStreamed) {
		t.Fatalf("status %q (%s), flags %v", rec.Status, rec.Error, rec.Flags)
	}
	if rec.FirstTokenAt.IsZero() || rec.FirstTokenAt.Before(rec.HeadersAt) || !rec.LastTokenAt.Equal(rec.FirstTokenAt) {
		t.Errorf("first token %v, last %v, headers %v: want the body's arrival, after the headers", rec.FirstTokenAt, rec.LastTokenAt, rec.HeadersAt)
	}
	if _, ok := rec.TTFTFromSent(); !ok {
		t.Error("no TTFT")
	}
	if d, ok := rec.TPOT(); ok {
		t.Errorf("TPOT %v for an answer that arrived at once", d)
	}
	if len(rec.ChunkUS) != 0 {
		t.Errorf("chunk timings %v: one body has no inter-token gaps", rec.ChunkUS)
	}
}

// TestUnstreamedByRequest: an answer the client asked for unstreamed has the same timings (its
// first usable token is the body) and no not_streamed flag: the server did as asked.
func TestUnstreamedByRequest(t *testing.T) {
	rec := doFile(t, serveFile(t, "ok.json", 200).URL, true)
	if rec.Status != record.StatusOK || rec.HasFlag(record.FlagNotStreamed) {
		t.Fatalf("status %q (%s), flags %v", rec.Status, rec.Error, rec.Flags)
	}
	if rec.FirstTokenAt.IsZero() || !rec.LastTokenAt.Equal(rec.FirstTokenAt) {
		t.Errorf("first token %v, last %v: want the body's arrival", rec.FirstTokenAt, rec.LastTokenAt)
	}
	if d, ok := rec.TPOT(); ok {
		t.Errorf("TPOT %v for an answer that arrived at once", d)
	}
}
