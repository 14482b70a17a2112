package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/loadgen/loadgentest"
)

func TestSweepCommand(t *testing.T) {
	srv := httptest.NewServer(&loadgentest.Handler{})
	defer srv.Close()
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	tmp := t.TempDir()
	cf := filepath.Join(tmp, "c.yaml")
	os.WriteFile(cf, []byte(runContract), 0o600)
	dir := filepath.Join(tmp, "sw")
	code, out, errs := runCLI(t, "sweep", "--target", srv.URL, "--contract", cf, "--concurrency", "2,1", "--requests", "4", "-o", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"2 points (concurrency, grid)", "c1", "c2", "goodput/s", "knee:", "capacity at the SLO", "wrote " + dir + "/sweep.json, " + dir + "/sweep.csv and " + dir + "/sweep.html"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// Each point says which of how many it is before it runs.
	for _, want := range []string{"sweep: point 1 of 2: c1", "sweep: point 2 of 2: c2"} {
		if !strings.Contains(errs, want) {
			t.Errorf("progress lacks %q:\n%s", want, errs)
		}
	}
	for _, f := range []string{"sweep.json", "sweep.csv", "sweep.html", "c1/requests.jsonl", "c2/evidence.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	// pel report renders a sweep directory too.
	if code, out, errs := runCLI(t, "report", dir); code != 0 || !strings.Contains(out, "2 points (concurrency, grid)") {
		t.Errorf("report of a sweep: exit %d %s\n%s", code, errs, out)
	}
	page := filepath.Join(tmp, "again.html")
	if code, out, errs := runCLI(t, "report", dir, "--html", page); code != 0 || out != page+"\n" {
		t.Errorf("report --html of a sweep: exit %d %q %s", code, out, errs)
	}
	code, out, _ = runCLI(t, "sweep", "--target", srv.URL, "--contract", cf, "--rates", "200", "--requests", "3", "-o", filepath.Join(tmp, "sw2"), "--json")
	var res struct {
		Mode   string `json:"mode"`
		Points []struct {
			Name     string `json:"name"`
			Requests int    `json:"requests"`
		} `json:"points"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 || res.Mode != "rate" || len(res.Points) != 1 || res.Points[0].Name != "r200" || res.Points[0].Requests != 3 {
		t.Errorf("--json: exit %d %v %+v", code, err, res)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no load list", []string{"--target", srv.URL, "--contract", cf}, "exactly one of"},
		{"both lists", []string{"--target", srv.URL, "--contract", cf, "--concurrency", "1", "--rates", "1"}, "exactly one of"},
		{"bad list", []string{"--target", srv.URL, "--contract", cf, "--concurrency", "1,x"}, `"x"`},
		{"no contract", []string{"--target", srv.URL, "--concurrency", "1"}, "--contract"},
		{"dead target", []string{"--target", dead.URL, "--contract", cf, "--concurrency", "1", "-o", filepath.Join(tmp, "dead")}, ""},
		{"taken dir", []string{"--target", srv.URL, "--contract", cf, "--concurrency", "1", "-o", dir}, "not empty"},
		{"search list too long", []string{"--target", srv.URL, "--contract", cf, "--slo-search", "--rates", "1,2,3", "-o", filepath.Join(tmp, "s1")}, "START or START,MAX"},
		{"search resolution", []string{"--target", srv.URL, "--contract", cf, "--slo-search", "--resolution", "2", "-o", filepath.Join(tmp, "s2")}, "--resolution 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := runCLI(t, append([]string{"sweep"}, tc.args...)...)
			if code != 2 || !strings.Contains(errs, tc.want) {
				t.Errorf("exit %d, stderr %s", code, errs)
			}
		})
	}
}
