package runner

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/pel-ladder/pel/canary"
	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/loadgen/loadgentest"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/rundir"
)

const canaryRunContract = `name: kc
version: 1
model: m
arrival: {process: constant, rate: 400}
requests: 80
warmup: 50ms
tasks:
  - {name: t, prompt_tokens: 8, output_tokens: 4}
canary: {share: 0.3}
`

func TestCanaryRun(t *testing.T) {
	base := httptest.NewServer(&loadgentest.Handler{Models: []string{"m"}})
	defer base.Close()
	cand := httptest.NewServer(&loadgentest.Handler{Models: []string{"m"}})
	defer cand.Close()
	other := httptest.NewServer(&loadgentest.Handler{Models: []string{"other"}})
	defer other.Close()
	tmp := t.TempDir()
	c, err := contract.Parse([]byte(canaryRunContract), filepath.Join(tmp, "c.yaml"))
	if err != nil {
		t.Fatal(err)
	}

	// A candidate that cannot take the contract is refused before anything is written.
	for _, target := range []string{"http://127.0.0.1:1", other.URL} {
		dir := filepath.Join(tmp, "bad")
		_, err := Run(context.Background(), Config{Target: base.URL, Contract: c, OutDir: dir, Canary: &Canary{Target: target}})
		if !errors.Is(err, ErrBadInput) {
			t.Errorf("candidate %s: err %v, want bad input", target, err)
		}
		if _, serr := os.Stat(dir); serr == nil {
			t.Errorf("candidate %s: %s created on bad input", target, dir)
		}
	}

	dir := filepath.Join(tmp, "run")
	ev, err := Run(context.Background(), Config{Target: base.URL, Contract: c, OutDir: dir, Canary: &Canary{Target: cand.URL}})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := record.ReadFile(filepath.Join(dir, rundir.RequestsFile))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range recs {
		isCand := canary.Draw(c.Seed, r.Seq) < 0.3
		want := base.URL
		if isCand {
			want, n = cand.URL, n+1
		}
		if (r.Phase == record.PhaseCanary) != isCand || r.Target != want {
			t.Errorf("task %d: phase %s target %s; want candidate %v", r.Seq, r.Phase, r.Target, isCand)
		}
	}
	if n == 0 || n == len(recs) {
		t.Fatalf("%d of %d tasks to the candidate", n, len(recs))
	}
	// The run's own evidence is the baseline's; the candidate's is apart, cold/warm split.
	_, hasCanary := ev.Workload.ByPhase[record.PhaseCanary]
	if hasCanary || ev.Workload.ByPhase[record.PhaseWarm].Requests+ev.Workload.ByPhase[record.PhaseCold].Requests != len(recs)-n {
		t.Errorf("baseline evidence %v, want its %d tasks only", ev.Workload.ByPhase, len(recs)-n)
	}
	cev, err := evidence.ReadFile(filepath.Join(dir, canary.EvidenceFile))
	if err != nil {
		t.Fatal(err)
	}
	if cev.Workload.ByPhase[record.PhaseWarm].Requests+cev.Workload.ByPhase[record.PhaseCold].Requests != n {
		t.Errorf("candidate evidence: %+v, want its %d tasks split cold/warm", cev.Workload.ByPhase, n)
	}
	l, err := canary.ReadFile(filepath.Join(dir, canary.LogFile))
	if err != nil {
		t.Fatal(err)
	}
	if l.CanaryTasks != n || l.Arrivals != len(recs) || l.Share != 0.3 || l.Frozen || l.NotFrozen == "" || l.Stop != nil {
		t.Errorf("canary.json: %+v", l)
	}
}
