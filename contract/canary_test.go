package contract

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// The canary block: read, validated with file:line, defaulted, and never hashed (a canary
// run and a plain run of one contract compare; a baseline run's triggers apply).
func TestCanaryBlock(t *testing.T) {
	const base = "name: p\nversion: 1\narrival: {process: poisson, rate: 1}\nrequests: 3\ntasks:\n  - {name: a, prompt_tokens: 8}\n"
	plain := mustParse(t, base)
	if plain.Canary.Set || plain.Canary != DefaultCanary() {
		t.Errorf("no block: %+v, want the defaults unset", plain.Canary)
	}
	cases := []struct {
		name, src string
		want      Canary
		err       string
	}{
		{name: "defaults", src: "canary: {}\n", want: Canary{Set: true, Share: 0.1, EarlyStop: true, Alpha: 0.05}},
		{name: "every key", src: "canary:\n  share: 0.25\n  max_duration: 5m\n  max_tasks: 400\n  early_stop: false\n  alpha: 0.01\n",
			want: Canary{Set: true, Share: 0.25, MaxDuration: 5 * time.Minute, MaxTasks: 400, EarlyStop: false, Alpha: 0.01}},
		{name: "share 1", src: "canary: {share: 1}\n", err: "c.yaml:7: canary.share: want a probability strictly between 0 and 1"},
		{name: "share 0", src: "canary: {share: 0}\n", err: "canary.share: want a probability strictly between 0 and 1"},
		{name: "alpha", src: "canary: {alpha: 0.7}\n", err: "canary.alpha: want a false-alarm rate in (0, 0.5]"},
		{name: "max_tasks", src: "canary: {max_tasks: 0}\n", err: "canary.max_tasks: must be at least 1"},
		{name: "max_duration", src: "canary: {max_duration: 0s}\n", err: "canary.max_duration: must be positive"},
		{name: "typo", src: "canary: {shares: 0.2}\n", err: `canary.shares: unknown key (did you mean "share"?)`},
		{name: "not a mapping", src: "canary: 0.1\n", err: "canary: want a mapping"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Parse([]byte(base+c.src), "c.yaml")
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Canary != c.want {
				t.Errorf("canary %+v, want %+v", got.Canary, c.want)
			}
			if got.SHA256() != plain.SHA256() || bytes.Contains(got.Canonical(), []byte("canary")) {
				t.Errorf("the canary block entered the hash: %s", got.Canonical())
			}
		})
	}
	if !bytes.Contains(Example(), []byte("\ncanary:")) {
		t.Error("the example contract does not show the canary block")
	}
}
