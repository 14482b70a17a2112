package scrape

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDiscover: a target's own /metrics page names its engine from real pages; a DCGM
// exporter's page, a page that is not Prometheus text and a missing page are refused with
// the reason.
func TestDiscover(t *testing.T) {
	page := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", "fixtures", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		name   string
		code   int
		body   []byte
		engine string
		err    string
	}{
		{"vllm v1", 200, page("vllm-v1-dp-pr22227-fragment.prom"), "vllm", ""},
		{"sglang", 200, page("sglang-docs-2025-03.prom"), "sglang", ""},
		{"llama.cpp", 200, page("llamacpp-ik-pr695.prom"), "llamacpp", ""},
		{"dcgm exporter", 200, page("dcgm-exporter-issue250-fragment.prom"), "", "no serving engine's metrics"},
		{"not served", 404, []byte("not found"), "", "HTTP 404"},
		{"html", 200, []byte("<html>\x00<body>hello</body></html>"), "", "parse"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.code)
				w.Write(tc.body)
			}))
			defer srv.Close()
			eng, err := Discover(context.Background(), srv.Client(), srv.URL+"/metrics")
			if eng != tc.engine || (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("Discover = %q, %v; want %q, error with %q", eng, err, tc.engine, tc.err)
			}
		})
	}
}
