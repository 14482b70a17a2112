package evidence

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/internal/golden"
)

func sample() *Evidence {
	e := New()
	e.Contract = ContractRef{Name: "chat-mix", Version: 1, SHA256: "abc"}
	e.Run = Run{Target: "http://127.0.0.1:8000", Engine: "vllm", StartedAt: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), DurationS: 30,
		Phases: []Phase{{Name: "cold", StartS: 0, EndS: 5}, {Name: "warm", StartS: 5, EndS: 30}}}
	e.Add(Signal{Name: SigKVUsageMax, Value: 0.99, Unit: "ratio", Stage: StageServingCache, Source: "vllm /metrics", Phase: "warm"})
	e.Add(Signal{Name: SigKVUsageMax, Value: 0.5, Unit: "ratio", Stage: StageServingCache, Source: "vllm /metrics", Phase: "cold"})
	e.Add(Signal{Name: SigKVUsageMax, Value: 0.7, Unit: "ratio", Stage: StageServingCache, Source: "vllm /metrics", Phase: "warm", Labels: map[string]string{"engine": "1"}})
	layer := LayerMemory
	e.OwnerLayer = &layer
	e.Findings = append(e.Findings, Finding{ID: "kv-thrash", Layer: LayerMemory, Severity: SeverityCritical, Symptom: "KV cache full", Confidence: 0.8,
		Evidence: []EvidenceItem{{Signal: SigKVUsageMax, Value: 0.99, Op: ">=", Threshold: 0.95, Unit: "ratio", Source: "vllm /metrics", Stage: 4}}})
	e.StopConditions[StopOwnerLayer] = StopCondition{Met: true, Reason: "one layer explains 90% of rejected tasks"}
	return e
}

func TestGoldenEncoding(t *testing.T) {
	var buf bytes.Buffer
	if err := sample().Encode(&buf); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "sample.golden.json")
	golden.Check(t, path, buf.Bytes())
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Round trip through Decode keeps what the encoder wrote.
	e, err := Decode(bytes.NewReader(want))
	if err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	if err := e.Encode(&again); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Bytes(), want) {
		t.Error("decode/encode round trip changed the document")
	}
}

func TestShape(t *testing.T) {
	e := New()
	if len(e.Stages) != 5 {
		t.Fatalf("New: %d stages, want 5", len(e.Stages))
	}
	for i, st := range e.Stages {
		if st.Stage != i+1 || st.Status != StatusMissing || st.Name == "" {
			t.Errorf("stage %d: %+v", i+1, st)
		}
	}
	var buf bytes.Buffer
	e.Encode(&buf)
	for _, key := range []string{`"framework": "Performance Evidence Ladder"`, `"owner_layer": null`, `"acceptance_unit": "cost_per_accepted_task_under_workload_contract"`, `"stop_conditions": {}`} {
		if !strings.Contains(buf.String(), key) {
			t.Errorf("missing %s in %s", key, buf.String())
		}
	}
}

func TestSignalLookup(t *testing.T) {
	e := sample()
	s, ok := e.Signal(SigKVUsageMax)
	if !ok || s.Value != 0.99 {
		t.Fatalf("headline = %+v, %v; want the unlabelled warm value 0.99", s, ok)
	}
	if _, ok := e.Signal(SigPreemptionRate); ok {
		t.Error("absent signal reported present")
	}
	if n := len(e.SignalsNamed(SigKVUsageMax)); n != 3 {
		t.Errorf("SignalsNamed = %d, want 3", n)
	}
	if e.Stage(StageServingCache).Status != StatusPartial {
		t.Error("Add should mark a missing stage partial")
	}
}

func TestDecodeRejectsOtherSchema(t *testing.T) {
	if _, err := Decode(strings.NewReader(`{"schema_version": 99}`)); err == nil {
		t.Error("accepted schema_version 99")
	}
	if _, err := Decode(strings.NewReader(`{`)); err == nil {
		t.Error("accepted truncated JSON")
	}
}

func TestWriteFileMode(t *testing.T) {
	p := filepath.Join(t.TempDir(), "evidence.json")
	if err := sample().WriteFile(p); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	if _, err := ReadFile(p); err != nil {
		t.Fatal(err)
	}
}

// An evidence.json past MaxEvidenceBytes is refused before it is decoded whole, and a
// histogram past MaxHistogramBuckets after, each naming the bound.
func TestDecodeBounds(t *testing.T) {
	e := New()
	var b bytes.Buffer
	if err := e.Encode(&b); err != nil {
		t.Fatal(err)
	}
	if _, err := Decode(bytes.NewReader(b.Bytes())); err != nil {
		t.Fatalf("pel's own evidence: %v", err)
	}
	big := append(bytes.TrimSuffix(bytes.TrimSpace(b.Bytes()), []byte("}")), []byte(`,"pad":"`+strings.Repeat("x", MaxEvidenceBytes)+`"}`)...)
	if _, err := Decode(bytes.NewReader(big)); err == nil || !strings.Contains(err.Error(), "MaxEvidenceBytes") {
		t.Errorf("a %d-byte file: %v", len(big), err)
	}
	e.Workload.Histograms = map[string]Histogram{"ttft_ms": {Unit: "ms", Bounds: make([]float64, MaxHistogramBuckets+1), Counts: make([]int64, MaxHistogramBuckets+1)}}
	b.Reset()
	if err := e.Encode(&b); err != nil {
		t.Fatal(err)
	}
	if _, err := Decode(&b); err == nil || !strings.Contains(err.Error(), "workload.histograms.ttft_ms: 10001 buckets") {
		t.Errorf("a histogram of %d buckets: %v", MaxHistogramBuckets+1, err)
	}
}
