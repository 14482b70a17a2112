package otlp

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/rundir"
	"github.com/pel-ladder/pel/runner"
	"github.com/pel-ladder/pel/sim"
	"github.com/pel-ladder/pel/sim/simtest"
)

// the receiver is a runner.Collector.
var _ runner.Collector = (*Receiver)(nil)

func TestNewAddr(t *testing.T) {
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:4318", true}, {"[::1]:0", true}, {"localhost:4318", true},
		{"0.0.0.0:4318", false}, {"10.1.2.3:4318", false}, {"4318", false},
	} {
		_, err := New(Config{Addr: tc.addr})
		if (err == nil) != tc.ok {
			t.Errorf("%s: err %v", tc.addr, err)
		}
	}
	if _, err := New(Config{Addr: "0.0.0.0:4318", AllowRemote: true}); err != nil {
		t.Error(err)
	}
}

func post(t *testing.T, url, ct, enc string, body []byte) (int, string, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", ct)
	if enc != "" {
		req.Header.Set("Content-Encoding", enc)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), b
}

func TestReceiverHTTP(t *testing.T) {
	dir := t.TempDir()
	r, err := New(Config{Addr: "127.0.0.1:0", MaxBody: 4096, Linger: -1, TracePrefix: tid1[:16]})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := r.Start(ctx, &rundir.Dir{Path: dir}); err != nil {
		t.Fatal(err)
	}
	u := r.URL()
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(protoBody(t))
	zw.Close()
	for _, tc := range []struct {
		name, ct, enc string
		body          []byte
		code          int
		respCT        string
		resp          string
	}{
		{"protobuf", ContentProtobuf, "", protoBody(t), 200, ContentProtobuf, ""},
		{"json", ContentJSON, "", []byte(jsonBody), 200, ContentJSON, "{}"},
		{"gzip protobuf", ContentProtobuf, "gzip", gz.Bytes(), 200, ContentProtobuf, ""},
		{"garbage", ContentJSON, "", []byte("{"), 400, "", ""},
		{"too large", ContentJSON, "", bytes.Repeat([]byte(" "), 5000), 413, "", ""},
		{"wrong type", "text/plain", "", []byte("x"), 400, "", ""},
	} {
		code, ct, b := post(t, u, tc.ct, tc.enc, tc.body)
		if code != tc.code || (tc.respCT != "" && ct != tc.respCT) || (tc.code == 200 && string(b) != tc.resp) {
			t.Errorf("%s: %d %q %q", tc.name, code, ct, b)
		}
	}
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d", resp.StatusCode)
	}
	if err := r.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	spans, err := ReadSpans(filepath.Join(dir, rundir.SpansFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) != 3 {
		t.Fatalf("%d spans kept, want 3 (one per accepted body)", len(spans))
	}
	for _, s := range spans {
		if s.TraceID != tid1 || s.TTFTS == nil || *s.TTFTS != 0.05 {
			t.Errorf("kept %+v", s)
		}
	}
	if st, _ := os.Stat(filepath.Join(dir, rundir.SpansFile)); st.Mode().Perm() != 0o600 {
		t.Errorf("spans.jsonl mode %v", st.Mode().Perm())
	}
}

const simContract = `name: otlp-it
version: 1
api: chat
arrival: {process: closed, concurrency: 4}
requests: 40
seed: 3
timeout: 10s
tasks:
  - {name: chat, prompt_tokens: {dist: fixed, value: 64}, output_tokens: 16}
`

// TestSimLoopback: pel sim exports its llm_request spans to the receiver during a runner.Run;
// every completed task joins its span by trace id, and the per-request client−server TTFT
// gap is measured. Bounded by the request count, not by time.
func TestSimLoopback(t *testing.T) {
	c := parseContract(t, simContract)
	dir := filepath.Join(t.TempDir(), "run")
	rcv, err := New(Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	u, err := rcv.Listen()
	if err != nil {
		t.Fatal(err)
	}
	srv := simtest.Start(t, "healthy", sim.Options{Speed: 20, Seed: 1, Hostname: "sim", OTLPEndpoint: u}, false)
	ev, err := runner.Run(context.Background(), runner.Config{Target: srv.URL(), Contract: c, OutDir: dir, Collectors: []runner.Collector{rcv}})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := record.ReadFile(filepath.Join(dir, rundir.RequestsFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.TraceID == "" || !r.OK() {
			t.Fatalf("record %+v", r)
		}
	}
	cov, ok := ev.Signal(evidence.SigOTLPJoinCoverage)
	if !ok || cov.Value < 0.99 {
		t.Fatalf("coverage %+v (notes %v)", cov, ev.Run.Notes)
	}
	gap, ok := ev.Signal(evidence.SigTTFTGapP50)
	if !ok {
		t.Fatal("no client−server TTFT gap")
	}
	ttft, _ := ev.Signal(evidence.SigOTLPTTFTP50)
	client, _ := ev.Signal(evidence.SigTTFTFromSentP50)
	t.Logf("coverage %v, server TTFT p50 %v ms, client TTFT-from-sent p50 %v ms, gap p50 %v ms", cov.Value, ttft.Value, client.Value, gap.Value)
	// The gap is loopback HTTP + SSE framing: it must be below the client's own TTFT.
	if client.Value > 0 && gap.Value >= client.Value {
		t.Errorf("gap %v ≥ client TTFT %v", gap.Value, client.Value)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, rundir.SpansFile)); !strings.Contains(string(b), `"trace_id"`) {
		t.Error("spans.jsonl empty")
	}
}

func parseContract(t *testing.T, text string) *contract.Contract {
	t.Helper()
	c, err := contract.Parse([]byte(text), "otlp-it.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return c
}
