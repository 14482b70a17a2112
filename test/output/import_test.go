package output

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// vllmFile is a vllm bench serve --save-detailed result of ten requests, errs giving each
// one's error text and empty marking the ones recorded as successes with no token.
func vllmFile(t *testing.T, errs map[int]string, empty map[int]bool) string {
	var ttfts, itls, outs, es []string
	for i := 0; i < 10; i++ {
		switch {
		case errs[i] != "" || empty[i]:
			ttfts, itls, outs = append(ttfts, "0.0"), append(itls, "[]"), append(outs, "0")
		default:
			ttfts, itls, outs = append(ttfts, "0.05"), append(itls, "[0.01, 0.01, 0.01]"), append(outs, "4")
		}
		es = append(es, fmt.Sprintf("%q", errs[i]))
	}
	data := fmt.Sprintf(`{"date": "20250601-120000", "backend": "vllm", "model_id": "m", "request_rate": 2.0, "duration": 5.0,
 "completed": %d, "input_lens": [%s], "output_lens": [%s], "ttfts": [%s], "itls": [%s], "errors": [%s]}`,
		10-len(errs), strings.Repeat("16, ", 9)+"16", strings.Join(outs, ", "), strings.Join(ttfts, ", "), strings.Join(itls, ", "), strings.Join(es, ", "))
	p := filepath.Join(t.TempDir(), "result.json")
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestImportSaysWhatTheFileShows: an import holds only the measuring client's account of
// each request. An empty completion the tool counted a success, and failures of the tool's
// own parser on the server's in-band error object, are named as what the file shows; no
// layer is named on that alone, and no probe asks for a request id the import never sent.
func TestImportSaysWhatTheFileShows(t *testing.T) {
	for _, tc := range []struct {
		name  string
		file  string
		shows string
	}{
		{"empty completion", vllmFile(t, nil, map[int]bool{3: true}), "an empty completion"},
		{"client failed on an error object", vllmFile(t, map[int]string{2: "Traceback...\nKeyError: 'choices'", 5: "KeyError: 'choices'", 7: "KeyError: 'choices'"}, nil), "stream chunk without choices"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			code, out := pel(t, "import", "vllm-bench", tc.file, "-o", dir)
			if code > 1 {
				t.Fatalf("pel import: exit %d\n%s", code, out)
			}
			_, full := pel(t, "report", dir, "--full")
			if !strings.Contains(full, tc.shows) {
				t.Errorf("the report does not say what the file shows (%q):\n%s", tc.shows, full)
			}
			if strings.Contains(full, "X-Request-Id") {
				t.Errorf("the report proposes a request-id probe an import cannot have:\n%s", full)
			}
			ev := evidenceOf(t, dir)
			if o := ev["owner_layer"]; o != nil {
				t.Errorf("a layer named from the measuring client's account alone: %v (%s)", o, ev["verdict"])
			}
		})
	}
}

// TestImportKeepsTheFilesRates: pel import of a real vllm bench serve result (request_rate
// inf, 200 ShareGPT requests to Llama-3.3-70B on 8 GPUs, from a public repository) reaches
// the output throughput the file itself states, within 2%: the schedule comes from how the
// file offered its requests, not an even spread over its duration. A cut copy of the file
// is refused with the byte it ends at.
func TestImportKeepsTheFilesRates(t *testing.T) {
	file := "../../importer/testdata/vllm-llama70b-tp8/serving_meta-llama-Llama-3.3-70B-Instruct_tp8_pp1_sharegpt_qps_inf.json"
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		OutputThroughput float64 `json:"output_throughput"`
	}
	if err := json.Unmarshal(raw, &v); err != nil || v.OutputThroughput <= 0 {
		t.Fatalf("the file's output_throughput: %v, %v", v.OutputThroughput, err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	if code, out := pel(t, "import", "vllm-bench", file, "-o", dir); code > 1 {
		t.Fatalf("pel import: exit %d\n%s", code, out)
	}
	got, _ := at(evidenceOf(t, dir), "workload", "output_tokens_per_s").(float64)
	if math.Abs(got/v.OutputThroughput-1) > 0.02 {
		t.Errorf("output throughput %.1f tokens/s, the file's %.1f (%+.1f%%)", got, v.OutputThroughput, 100*(got/v.OutputThroughput-1))
	}
	cut := filepath.Join(t.TempDir(), "cut.json")
	if err := os.WriteFile(cut, raw[:len(raw)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	code, out := pel(t, "import", "vllm-bench", cut, "-o", filepath.Join(t.TempDir(), "cut"))
	if want := fmt.Sprintf("the file ends at byte %d", len(raw)/2); code != 2 || !strings.Contains(out, want) {
		t.Errorf("pel import of a cut file: exit %d, want 2 and %q:\n%s", code, want, out)
	}
}
