package runner

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode"
)

// FuzzProbeEngine: whatever a server answers on /props, /get_server_info or /version, the
// probe returns bounded, printable configuration values or none, and never fails.
func FuzzProbeEngine(f *testing.F) {
	f.Add("/props", `{"default_generation_settings":{"n_ctx":2048},"total_slots":4,"build_info":"b4750"}`)
	f.Add("/get_server_info", `{"chunked_prefill_size":8192,"max_running_requests":256,"version":"0.5.4"}`)
	f.Add("/version", `{"version":"0.9.1"}`)
	f.Add("/version", `{"version":"\u001b[31m0.9"}`)
	f.Add("/props", `{"total_slots":1e400}`)
	f.Fuzz(func(t *testing.T, path, body string) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != path {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(body))
		}))
		defer srv.Close()
		got := probeEngine(context.Background(), srv.Client(), srv.URL, "")
		for k, v := range got {
			if len(v) > 128 {
				t.Fatalf("%s: %d bytes kept", k, len(v))
			}
			if strings.IndexFunc(v, func(r rune) bool { return unicode.IsControl(r) }) >= 0 {
				t.Fatalf("%s: control character kept: %q", k, v)
			}
		}
	})
}
