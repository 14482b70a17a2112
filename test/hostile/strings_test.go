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

// The API key (OPENAI_API_KEY of every case, sk-hostile-key-1234), echoed by a server as
// the /v1/models id, as /props build information and as a finish_reason: no file of the
// run and nothing printed holds it.
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

// A finish_reason of =HYPERLINK(...) and a task name starting with @ would be formula cells
// in tasks.csv and summary.csv; every text cell starting with = + - @ tab or CR is
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

// pel k8s job prints flag values into manifests someone applies: a newline in --target
// would end the header comment and add a ConfigMap of the attacker's, a newline in --image
// would break the YAML, credentials in --target or --metrics would be printed verbatim, and
// a --start-at years in the past would give the merge job --wait -227181h. Each is refused
// (exit 2) with nothing printed; pel run refuses such a start too.
func TestK8sJobValues(t *testing.T) {
	dir := t.TempDir()
	cf := writeFile(t, dir, "c.yaml", contractYAML(1, time.Minute, 5*time.Second, ""))
	base := []string{"k8s", "job", "--contract", cf, "--shards", "2"}
	good := []string{"--target", "http://vllm.serving.svc:8000", "--image", "registry.example/pel:v1"}
	res := pel(t, time.Minute, nil, append(append(base, good...), "--metrics", "http://vllm.serving.svc:8000/metrics")...)
	if res.code != 0 || !strings.Contains(res.stdout, "kind: Job") {
		t.Fatalf("a good job: exit %d: %s", res.code, tail(res.stderr))
	}
	for _, c := range []struct {
		name   string
		args   []string
		errHas string
	}{
		{"newline in --target", []string{"--target", "http://x:8000\n---\napiVersion: v1\nkind: ConfigMap", "--image", "pel:v1"}, "no spaces or control characters"},
		{"newline in --image", []string{"--target", "http://x:8000", "--image", "pel:v1\n    evil: true"}, "not an image reference"},
		{"credentials in --target", []string{"--target", "http://admin:pw@vllm:8000", "--image", "pel:v1"}, "--api-key-secret"},
		{"token in --metrics", append(append([]string{}, good...), "--metrics", "http://vllm:8000/metrics?token=s3cret"), "--api-key-secret"},
		{"--start-at years in the past", append(append([]string{}, good...), "--start-at", "2000-01-01T00:00:00Z"), "before now"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := pel(t, time.Minute, nil, append(append([]string{}, base...), c.args...)...)
			if res.code != 2 || res.stdout != "" || !strings.Contains(res.stderr, c.errHas) {
				t.Errorf("exit %d, want 2 naming %q with nothing printed; stdout %.300q stderr %s", res.code, c.errHas, res.stdout, tail(res.stderr))
			}
			if strings.Contains(res.stderr, "pw@") || strings.Contains(res.stderr, "s3cret") {
				t.Errorf("the credentials are printed: %s", res.stderr)
			}
		})
	}
	res = pel(t, time.Minute, nil, "run", "--target", "http://127.0.0.1:1", "--contract", cf, "--shard", "0/2", "--start-at", "2000-01-01T00:00:00Z", "-o", filepath.Join(dir, "out"))
	if res.code != 2 || !strings.Contains(res.stderr, "before now") {
		t.Errorf("pel run --start-at 2000: exit %d: %s", res.code, tail(res.stderr))
	}
}
