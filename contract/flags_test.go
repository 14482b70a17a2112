package contract

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseLengthSpec(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		spec string
		want Dist
		err  string
	}{
		{spec: "512", want: Dist{Kind: DistFixed, Value: 512}},
		{spec: "normal:512,64", want: Dist{Kind: DistNormal, Mean: 512, SD: 64}},
		{spec: "lognormal:200,80,8,2000", want: Dist{Kind: DistLognormal, Mean: 200, SD: 80, Min: f(8), Max: f(2000)}},
		{spec: "uniform:100,400", want: Dist{Kind: DistUniform, Min: f(100), Max: f(400)}},
		{spec: "empirical:100,400,800", want: Dist{Kind: DistEmpirical, Values: []float64{100, 400, 800}}},
		{spec: "fixed:7", want: Dist{Kind: DistFixed, Value: 7}},
		{spec: "0", err: "at least 1"},
		{spec: "normal:512", err: "MEAN,SD"},
		{spec: "normal:-5,1", err: "positive"},
		{spec: "uniform:400,100", err: "greater than max"},
		{spec: "zipf:1,2", err: "unknown distribution"},
		{spec: "normal:a,b", err: "not a number"},
		{spec: "lots", err: "want a number"},
		{spec: "empirical:1.5", err: "whole number"},
	} {
		got, err := ParseLengthSpec(tc.spec)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want one containing %q", tc.spec, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.spec, err)
			continue
		}
		if got.String() != tc.want.String() || len(got.Values) != len(tc.want.Values) {
			t.Errorf("%q: got %s, want %s", tc.spec, got, tc.want)
		}
	}
}

func TestFromFlags(t *testing.T) {
	c, data, err := FromFlags(Flags{
		Rate: 4, Duration: 30 * time.Second, PromptTokens: "normal:512,64", OutputTokens: "128",
		Model: "m", SLO: map[string]time.Duration{"ttft.p99": 500 * time.Millisecond, "e2e.max": 20 * time.Second},
		Percentiles: []float64{50, 90, 99.9},
	})
	if err != nil {
		t.Fatal(err)
	}
	// The YAML it writes is itself a contract file with the same identity.
	again, err := Parse(data, "contract.yaml")
	if err != nil {
		t.Fatalf("written contract does not parse: %v\n%s", err, data)
	}
	if again.SHA256() != c.SHA256() {
		t.Errorf("sha256 differs between the flags' contract and its file")
	}
	if c.Arrival.Process != Poisson || c.Arrival.Rate != 4 || c.Duration != 30*time.Second || c.Model != "m" {
		t.Errorf("arrival/duration/model: %+v %s %q", c.Arrival, c.Duration, c.Model)
	}
	if d := c.Tasks[0].PromptTokens; d == nil || d.Kind != DistNormal || d.Mean != 512 || d.SD != 64 {
		t.Errorf("prompt tokens: %+v", d)
	}
	if c.Tasks[0].OutputTokens.Value != 128 {
		t.Errorf("output tokens: %+v", c.Tasks[0].OutputTokens)
	}
	if c.SLO.TTFT.P99 != 500*time.Millisecond || c.SLO.E2E.Max != 20*time.Second {
		t.Errorf("slo: %+v", c.SLO)
	}
	if len(c.Percentiles) != 3 || c.Percentiles[2] != 99.9 {
		t.Errorf("percentiles: %v", c.Percentiles)
	}

	closed, _, err := FromFlags(Flags{Concurrency: 8, Requests: 100, PromptTokens: "uniform:10,20"})
	if err != nil || closed.Arrival.Process != Closed || closed.Arrival.Concurrency != 8 {
		t.Errorf("closed loop: %+v, %v", closed, err)
	}
	b, _, err := FromFlags(Flags{Rate: math.Inf(1), Requests: 64, MaxInFlight: 8, PromptTokens: "10"})
	if err != nil || b.Arrival.Process != Burst || b.Requests != 64 || b.MaxInFlight != 8 {
		t.Errorf("burst (--rate inf --max-in-flight 8): %+v, %v", b, err)
	}
	g, _, err := FromFlags(Flags{Rate: 2, CV: 2, Duration: time.Second, PromptTokens: "10"})
	if err != nil || g.Arrival.Process != Gamma || g.Arrival.CV != 2 {
		t.Errorf("gamma: %+v, %v", g, err)
	}

	for _, tc := range []struct {
		f   Flags
		err string
	}{
		{Flags{Duration: time.Second, PromptTokens: "10"}, "--rate R"},
		{Flags{Rate: 1, Concurrency: 2, Duration: time.Second, PromptTokens: "10"}, "give one"},
		{Flags{Rate: 1, PromptTokens: "10"}, "--duration"},
		{Flags{Rate: 1, Duration: time.Second}, "--prompt-tokens"},
		{Flags{Rate: 1, Duration: time.Second, PromptTokens: "10", Dataset: "x.jsonl"}, "give one"},
		{Flags{Rate: 1, Duration: time.Second, PromptTokens: "normal:1"}, "--prompt-tokens"},
		{Flags{Rate: 1, Duration: time.Second, PromptTokens: "10", SLO: map[string]time.Duration{"ttft.p42": time.Second}}, "unknown SLO bound"},
		{Flags{Rate: -1, Duration: time.Second, PromptTokens: "10"}, "--rate R"},
		{Flags{Concurrency: 1 << 30, Duration: time.Second, PromptTokens: "10"}, "over pel's bound"},
		{Flags{Rate: 1, Duration: time.Second, PromptTokens: "10", Percentiles: []float64{100}}, "strictly between"},
		{Flags{Rate: math.Inf(1), Duration: time.Second, PromptTokens: "10"}, "--rate inf (every task due at once) needs --requests N"},
		{Flags{Concurrency: 4, MaxInFlight: 2, Requests: 10, PromptTokens: "10"}, "already is its cap"},
		{Flags{Rate: 1, MaxInFlight: -1, Requests: 10, PromptTokens: "10"}, "must not be negative"},
	} {
		if _, _, err := FromFlags(tc.f); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%+v: error %v, want one containing %q", tc.f, err, tc.err)
		}
	}
}

func TestParsePercentiles(t *testing.T) {
	got, err := ParsePercentiles("99.9, 50,p90,95,99")
	if err != nil || len(got) != 5 || got[0] != 50 || got[4] != 99.9 {
		t.Errorf("got %v, %v", got, err)
	}
	for _, s := range []string{"", "0", "100", "50,50", "x"} {
		if _, err := ParsePercentiles(s); err == nil {
			t.Errorf("%q: no error", s)
		}
	}
	if _, err := Parse([]byte("name: a\nversion: 1\narrival: {process: poisson, rate: 1}\nduration: 1s\ntasks: [{name: t, prompt_tokens: 5}]\npercentiles: [50, 100]\n"), "c.yaml"); err == nil || !strings.Contains(err.Error(), "percentiles[1]") {
		t.Errorf("bad percentile in a contract: %v", err)
	}
}
