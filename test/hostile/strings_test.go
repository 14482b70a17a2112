package hostile

import (
	"encoding/csv"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The API key (OPENAI_API_KEY of every case, sk-hostile-key-1234), echoed by a server, was
// stored: as the /v1/models id in evidence.json run.model, as /props build information in
// engine_config.build, as a finish_reason in requests.jsonl and tasks.csv. Now no file of
// the run and nothing printed holds it.
func TestEchoedKeyNotStored(t *testing.T) {
	const key = "sk-hostile-key-1234"
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"object":"list","data":[{"id":"` + key + `","object":"model"}]}`))
	})
	mux.HandleFunc("/props", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"total_slots":4,"build_info":"b1-` + key + `","default_generation_settings":{"n_ctx":4096}}`))
	})
	mux.HandleFunc("/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		sse(w, content, `data: {"choices":[{"index":0,"delta":{},"finish_reason":"`+key+`"}]}`, usage("30", "1"), done)
	})
	target := serve(t, mux)
	d, to := 2*time.Second, 5*time.Second
	c := strings.Replace(contractYAML(4, d, to, ""), "model: m\n", "", 1)
	res, dir := run(t, target, c, d, to)
	csvDir := filepath.Join(filepath.Dir(dir), "csv")
	rep := pel(t, time.Minute, nil, "report", dir, "--csv", csvDir)
	records(t, dir)
	for _, r := range []result{res, rep} {
		if strings.Contains(r.stdout+r.stderr, key) {
			t.Errorf("the key is printed: %s", tail(r.stdout+r.stderr))
		}
	}
	for _, d := range []string{dir, csvDir} {
		filepath.Walk(d, func(p string, fi os.FileInfo, err error) error {
			if err != nil || fi.IsDir() {
				return err
			}
			if b, _ := os.ReadFile(p); strings.Contains(string(b), key) {
				t.Errorf("%s holds the API key", p)
			}
			return nil
		})
	}
}

// A finish_reason of =HYPERLINK(...) and a task name starting with @ became formula cells
// in tasks.csv and summary.csv. Now every text cell starting with = + - @ tab or CR is
// neutralised with a leading quote (OWASP's rule).
func TestCSVFormulaCells(t *testing.T) {
	const reason = `=HYPERLINK("http://127.0.0.1:1/x","click")`
	target := api(t, func(w http.ResponseWriter, r *http.Request) {
		sse(w, content, `data: {"choices":[{"index":0,"delta":{},"finish_reason":"=HYPERLINK(\"http://127.0.0.1:1/x\",\"click\")"}]}`, usage("30", "1"), done)
	})
	d, to := 2*time.Second, 5*time.Second
	c := strings.Replace(contractYAML(4, d, to, ""), "name: chat,", `name: "@SUM(1+1)",`, 1)
	res, dir := run(t, target, c, d, to)
	if res.code > 1 {
		t.Fatalf("exit %d: %s", res.code, tail(res.stderr))
	}
	csvDir := filepath.Join(filepath.Dir(dir), "csv")
	if rep := pel(t, time.Minute, nil, "report", dir, "--csv", csvDir); rep.code != 0 {
		t.Fatalf("report --csv: exit %d: %s", rep.code, tail(rep.stderr))
	}
	seen := 0
	for _, f := range []string{"tasks.csv", "summary.csv"} {
		b, err := os.ReadFile(filepath.Join(csvDir, f))
		if err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(strings.NewReader(string(b))).ReadAll()
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for i, row := range rows {
			for j, cell := range row {
				if cell == reason || cell == "@SUM(1+1)" {
					t.Errorf("%s row %d column %d is a formula: %q", f, i+1, j+1, cell)
				}
				if cell == "'"+reason || cell == "'@SUM(1+1)" {
					seen++
				}
				if cell != "" && strings.ContainsRune("=+@\t\r", rune(cell[0])) {
					t.Errorf("%s row %d column %d starts a formula: %q", f, i+1, j+1, cell)
				}
			}
		}
	}
	if seen == 0 {
		t.Error("no neutralised cell found: the hostile strings did not reach the CSV")
	}
}
