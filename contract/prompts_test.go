package contract

import (
	"bytes"
	"strings"
	"testing"
)

// The prompts block: reuse_across_runs is read, typed and hashed; leaving it out (or
// writing its default) keeps the sha256 a contract had before the key existed.
func TestPromptsBlock(t *testing.T) {
	const base = "name: p\nversion: 1\narrival: {process: poisson, rate: 1}\nrequests: 3\ntasks:\n  - {name: a, prompt_tokens: 8}\n"
	plain := mustParse(t, base)
	if plain.Prompts.ReuseAcrossRuns {
		t.Fatal("reuse_across_runs defaults to true")
	}
	if bytes.Contains(plain.Canonical(), []byte("prompts")) {
		t.Errorf("an absent prompts block enters the canonical form: %s", plain.Canonical())
	}
	if def := mustParse(t, base+"prompts: {reuse_across_runs: false}\n"); def.SHA256() != plain.SHA256() {
		t.Error("writing the default changed the hash")
	}
	reuse := mustParse(t, base+"prompts:\n  reuse_across_runs: true\n")
	if !reuse.Prompts.ReuseAcrossRuns || reuse.SHA256() == plain.SHA256() {
		t.Errorf("reuse_across_runs: true not read or not hashed: %+v", reuse.Prompts)
	}
	for _, tc := range []struct{ src, want string }{
		{"prompts: {reuse_across_run: true}\n", `c.yaml:7: prompts.reuse_across_run: unknown key (did you mean "reuse_across_runs"?)`},
		{"prompts: {reuse_across_runs: yes please}\n", "prompts.reuse_across_runs: want true or false"},
		{"prompts: 3\n", "prompts: want a mapping"},
	} {
		_, err := Parse([]byte(base+tc.src), "c.yaml")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want %q", tc.src, err, tc.want)
		}
	}
	if !bytes.Contains(Example(), []byte("reuse_across_runs:")) {
		t.Error("the example contract does not show prompts.reuse_across_runs")
	}
}
