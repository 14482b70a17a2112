package compare

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pel-ladder/pel/compare/comparetest"
	"github.com/pel-ladder/pel/quantile"
	"github.com/pel-ladder/pel/record"
)

// TestStreamedIsHeld: a comparison of two directories streamed (Dirs, Open) is the one of
// the same runs held in memory (Load, then Compare), figure for figure: the summary is a
// reduction, not an approximation, below its bounds.
func TestStreamedIsHeld(t *testing.T) {
	tmp := t.TempDir()
	c := comparetest.Contract + "slo:\n  ttft: {p99: 400ms}\n"
	br := append(comparetest.Records(comparetest.Spec{N: 40, Seed: 1, Phase: record.PhaseCold}),
		comparetest.Records(comparetest.Spec{N: 400, Seed: 2, FirstSeq: 40, Lag: 1500000, EstimatedShare: 0.01})...)
	cr := append(comparetest.Records(comparetest.Spec{N: 40, Seed: 3, Phase: record.PhaseCold}),
		comparetest.Records(comparetest.Spec{N: 380, Seed: 4, FirstSeq: 40, Scale: 1.1, AcceptP: 0.97, Prompts: "seed 2"})...)
	b := write(t, filepath.Join(tmp, "b"), c, br, ttftTrigger(br, 0.1))
	cd := write(t, filepath.Join(tmp, "c"), c, cr, nil)
	streamed, err := Dirs(b, cd, Options{Resamples: 300})
	if err != nil {
		t.Fatal(err)
	}
	hb, err := Load(b)
	if err != nil {
		t.Fatal(err)
	}
	hc, err := Load(cd)
	if err != nil {
		t.Fatal(err)
	}
	if hb.sum != nil || len(hb.Records) != len(br) {
		t.Fatalf("Load holds %d records (summary %v), want %d held", len(hb.Records), hb.sum != nil, len(br))
	}
	held, err := Compare(hb, hc, Options{Resamples: 300})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.MarshalIndent(streamed, "", " ")
	h, _ := json.MarshalIndent(held, "", " ")
	if string(a) != string(h) {
		t.Errorf("streamed and held comparisons differ:\nstreamed %s\nheld %s", a, h)
	}
}

// TestFoldedRunKeepsItsFigures: a phase longer than maxClusters tasks is resampled in
// clusters, but its point estimates are still the exact order statistics of every task's
// recorded value (a fold moves values between units, never drops one), its counts are
// exact, and its units are bounded.
func TestFoldedRunKeepsItsFigures(t *testing.T) {
	n := 3*maxClusters + 5
	recs := comparetest.Records(comparetest.Spec{N: n, Seed: 9, AcceptP: 0.9})
	ptrs := make([]*record.Record, n)
	var ttft, itl []float64
	acc := 0.0
	for i := range recs {
		ptrs[i] = &recs[i]
		if d, ok := recs[i].TTFT(); ok {
			ttft = append(ttft, quantile.RecordedMs(d))
		}
		recs[i].ITLs(func(d time.Duration) { itl = append(itl, quantile.RecordedMs(d)) })
		if recs[i].Accepted {
			acc++
		}
	}
	s := newSide(ptrs, 0)
	if s.n != n || s.units > maxClusters {
		t.Fatalf("side of %d tasks: n %d, %d units (bound %d)", n, s.n, s.units, maxClusters)
	}
	sts := []stat{{kTTFT, 0.5}, {kTTFT, 0.99}, {kITL, 0.99}, {kAccept, 0}}
	b := s.bootstrap(sts, 50, rng(1, "t", "warm"))
	want := []float64{quantile.Of(ttft, 0.5), quantile.Of(ttft, 0.99), quantile.Of(itl, 0.99), acc / float64(n)}
	for i, st := range sts {
		if math.Abs(b.point[i]-want[i]) > 1e-12 {
			t.Errorf("%v: point %v, want %v (every task's value)", st, b.point[i], want[i])
		}
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, x := range b.reps[i] {
			lo, hi = math.Min(lo, x), math.Max(hi, x)
		}
		if !(lo <= want[i] && want[i] <= hi) || lo == hi {
			t.Errorf("%v: resamples span [%v, %v], want a spread around %v", st, lo, hi, want[i])
		}
	}
	if got := s.lat[kITL].Len(); got != len(itl) {
		t.Errorf("%d ITL values pooled, want %d", got, len(itl))
	}
	if len(s.perTask[kTTFT]) != uSample {
		t.Errorf("U test holds %d TTFTs, want the reservoir's %d", len(s.perTask[kTTFT]), uSample)
	}
}

// TestDistinctSample: a prompt set is exact up to maxDistinct members, then a hash sample
// whose overlap estimate stays near the truth.
func TestDistinctSample(t *testing.T) {
	var a, b distinct
	for i := range maxDistinct {
		a.add(fmt.Sprint("p", i))
	}
	if a.level != 0 || a.len() != maxDistinct {
		t.Fatalf("exact set: level %d, %d members", a.level, a.len())
	}
	// b shares half of a 100,000-prompt set with a.
	a = distinct{}
	for i := range 100_000 {
		a.add(fmt.Sprint("p", i))
		b.add(fmt.Sprint("p", i+50_000))
	}
	if a.len() > maxDistinct || b.len() > maxDistinct || a.level == 0 {
		t.Fatalf("sampled sets hold %d and %d (bound %d), level %d", a.len(), b.len(), maxDistinct, a.level)
	}
	shared, of := overlap(&a, &b, max(a.level, b.level))
	if share := float64(shared) / float64(of); math.Abs(share-0.5) > 0.05 {
		t.Errorf("estimated overlap %.3f (%d of %d), want 0.5 ± 0.05", share, shared, of)
	}
}

// TestTooManyPhases: a requests.jsonl naming more phases than a run holds is refused as bad
// input naming the file and the phase, before any side is sized by it.
func TestTooManyPhases(t *testing.T) {
	var recs []record.Record
	for i := range maxPhases + 1 {
		recs = append(recs, comparetest.Records(comparetest.Spec{N: 2, Seed: uint64(i), Phase: fmt.Sprint("p", i), FirstSeq: 2 * i})...)
	}
	dir := write(t, filepath.Join(t.TempDir(), "r"), "", recs, nil)
	_, err := Dirs(dir, dir, Options{})
	if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "requests.jsonl") || !strings.Contains(err.Error(), `phase "p8"`) {
		t.Errorf("err = %v, want bad input naming requests.jsonl and phase p8", err)
	}
}
