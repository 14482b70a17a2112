package canary

import (
	"testing"
	"time"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/workload"
)

// route sends n arrivals (one every 100 ms) through a router and returns the candidate's
// sequence numbers.
func route(r *Router, n int) []int {
	var out []int
	for i := range n {
		req := workload.Request{Seq: i, At: time.Duration(i) * 100 * time.Millisecond, Phase: record.PhaseWarm}
		r.Route(&req)
		if req.Phase == record.PhaseCanary {
			out = append(out, i)
		}
	}
	return out
}

func scope(share float64) contract.Canary {
	c := contract.DefaultCanary()
	c.Share = share
	return c
}

func TestRouterDeterministicPerSeed(t *testing.T) {
	a := route(NewRouter(42, scope(0.1), nil), 5000)
	b := route(NewRouter(42, scope(0.1), nil), 5000)
	c := route(NewRouter(43, scope(0.1), nil), 5000)
	if len(a) != len(b) {
		t.Fatalf("same seed routed %d then %d", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("same seed, arrival %d vs %d", a[i], b[i])
		}
	}
	same := 0
	in := map[int]bool{}
	for _, s := range a {
		in[s] = true
	}
	for _, s := range c {
		if in[s] {
			same++
		}
	}
	if same > len(a)/4 {
		t.Errorf("seeds 42 and 43 share %d of %d candidate arrivals: the draw ignores the seed", same, len(a))
	}
	// 5000 draws at 10%: 500 ± 3 standard deviations (21).
	if len(a) < 436 || len(a) > 564 {
		t.Errorf("share 0.1 routed %d of 5000", len(a))
	}
	// A larger share routes a superset: raising the share only adds arrivals.
	big := route(NewRouter(42, scope(0.3), nil), 5000)
	inBig := map[int]bool{}
	for _, s := range big {
		inBig[s] = true
	}
	for _, s := range a {
		if !inBig[s] {
			t.Fatalf("arrival %d goes to the candidate at share 0.1 but not at 0.3", s)
		}
	}
}

func TestRouterScopeAndStop(t *testing.T) {
	cases := []struct {
		name     string
		scope    func(*contract.Canary)
		stopAt   int // StopNow before this arrival (-1: never)
		wantKind string
		check    func(t *testing.T, seqs []int)
	}{{
		name: "max_tasks", scope: func(c *contract.Canary) { c.MaxTasks = 7 }, stopAt: -1, wantKind: StopMaxTasks,
		check: func(t *testing.T, seqs []int) {
			if len(seqs) != 7 {
				t.Errorf("%d tasks routed, want 7", len(seqs))
			}
		},
	}, {
		name: "max_duration", scope: func(c *contract.Canary) { c.MaxDuration = 10 * time.Second }, stopAt: -1, wantKind: StopMaxDuration,
		check: func(t *testing.T, seqs []int) {
			for _, s := range seqs {
				if s >= 100 {
					t.Errorf("arrival %d (at %v) routed after max_duration 10s", s, time.Duration(s)*100*time.Millisecond)
				}
			}
		},
	}, {
		name: "early stop", scope: func(*contract.Canary) {}, stopAt: 300, wantKind: StopTrigger,
		check: func(t *testing.T, seqs []int) {
			for _, s := range seqs {
				if s >= 300 {
					t.Errorf("arrival %d routed after the stop", s)
				}
			}
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sc := scope(0.5)
			c.scope(&sc)
			r := NewRouter(1, sc, func() time.Time { return time.Unix(100, 0) })
			var seqs []int
			for i := range 1000 {
				if i == c.stopAt {
					if !r.StopNow(Stop{Kind: StopTrigger, Reason: "test"}) || r.StopNow(Stop{Kind: StopTrigger}) {
						t.Fatal("StopNow: the first stop must win, once")
					}
				}
				req := workload.Request{Seq: i, At: time.Duration(i) * 100 * time.Millisecond, Phase: record.PhaseWarm}
				r.Route(&req)
				if req.Phase == record.PhaseCanary {
					seqs = append(seqs, i)
				}
			}
			c.check(t, seqs)
			s := r.Stopped()
			if s == nil || s.Kind != c.wantKind || s.At != time.Unix(100, 0) {
				t.Fatalf("stop %+v, want kind %s", s, c.wantKind)
			}
			if _, n := r.Counts(); n != len(seqs) {
				t.Errorf("router counts %d candidate arrivals, saw %d", n, len(seqs))
			}
		})
	}
}
