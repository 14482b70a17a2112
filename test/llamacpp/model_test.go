package llamacpp_test

import (
	"path/filepath"
	"testing"

	"github.com/pel-ladder/pel/record"
)

// TestModelBaseName: llama-server lists its model as the path given to -m and answers
// whatever model a request names, so a contract naming the file's base name runs, every
// task completes, and the listed id is what the records' requests carried.
func TestModelBaseName(t *testing.T) {
	s := start(t, "-np", "1", "-c", "1024")
	_, model := engine(t)
	r := pel(t, s.url, "", "name: m\nversion: 1\nmodel: "+filepath.Base(model)+"\narrival: {process: constant, rate: 2}\nrequests: 2\ntasks:\n  - {name: t, prompt_tokens: 8, output_tokens: 4}\n")
	if r.code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", r.code, r.stdout)
	}
	recs, err := record.ReadFile(filepath.Join(r.dir, "requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2", len(recs))
	}
	for _, rec := range recs {
		if rec.Status != record.StatusOK {
			t.Errorf("task %s: %s %s", rec.ID, rec.Status, rec.Error)
		}
	}
}
