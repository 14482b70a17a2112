package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/compare/comparetest"
	"github.com/pel-ladder/pel/evidence"
)

func TestCompareCommand(t *testing.T) {
	tmp := t.TempDir()
	mk := func(name string, s comparetest.Spec, contract string) string {
		dir := filepath.Join(tmp, name)
		trig := []evidence.Trigger{{Signal: evidence.SigAcceptanceRate, Op: "<", Bound: 0.9, Unit: "ratio", Basis: "test"}}
		if err := comparetest.WriteRun(dir, contract, comparetest.Records(s), trig); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	base := mk("base", comparetest.Spec{N: 200, Seed: 1}, "")
	same := mk("same", comparetest.Spec{N: 200, Seed: 2}, "")
	worse := mk("worse", comparetest.Spec{N: 200, Seed: 3, AcceptP: 0.6}, "")
	few := mk("few", comparetest.Spec{N: 5, Seed: 4}, "")
	other := mk("other", comparetest.Spec{N: 200, Seed: 5}, strings.Replace(comparetest.Contract, "rate: 10", "rate: 11", 1))
	for _, tc := range []struct {
		name     string
		args     []string
		code     int
		out, err string
	}{
		{"accept", []string{base, same}, 0, "verdict: ACCEPT", ""},
		{"reject", []string{base, worse}, 1, "verdict: REJECT", "pel: verdict: reject"},
		{"inconclusive", []string{base, few}, 1, "verdict: INCONCLUSIVE", "pel: verdict: inconclusive"},
		{"contract differs", []string{base, other}, 2, "", "different contracts"},
		{"contract change allowed", []string{"--allow-contract-change", base, other}, 0, "WARNING: CONTRACTS DIFFER", ""},
		{"one plain run", []string{base}, 2, "", "not an interleaved canary run"},
		{"bad level", []string{"--level", "95", base, same}, 2, "", "--level 95"},
		{"missing dir", []string{base, filepath.Join(tmp, "nope")}, 2, "", "nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := runCLI(t, append([]string{"compare", "--resamples", "200"}, tc.args...)...)
			if code != tc.code || !strings.Contains(out, tc.out) || !strings.Contains(errs, tc.err) {
				t.Errorf("exit %d (want %d)\nstdout:\n%s\nstderr: %s", code, tc.code, out, errs)
			}
		})
	}
	code, out, _ := runCLI(t, "compare", "--json", "--resamples", "200", base, worse)
	var res struct {
		Verdict  string `json:"verdict"`
		Triggers []struct {
			Status string `json:"status"`
		} `json:"triggers"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 1 || res.Verdict != "reject" || len(res.Triggers) != 1 || res.Triggers[0].Status != "fail" {
		t.Errorf("--json: exit %d, %+v, %v\n%.400s", code, res, err, out)
	}
}
