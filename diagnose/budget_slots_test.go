package diagnose

import (
	"testing"
	"time"

	"github.com/pel-ladder/pel/record"
)

func TestSlotWaits(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	// req is a request sent at s ms that ended at e ms (e < 0: its end was not seen).
	req := func(s, e int, phase string) record.Record {
		r := record.Record{Phase: phase, SentAt: at(s)}
		if e >= 0 {
			r.DoneAt = at(e)
		}
		return r
	}
	w := record.PhaseWarm
	multi := func(s1, e1, s2, e2 int) record.Record {
		r := record.Record{Phase: w, Steps: 2}
		st := []record.Record{req(s1, e1, w), req(s2, e2, w)}
		st[0].Step, st[1].Step = &record.StepRef{Index: 0}, &record.StepRef{Index: 1}
		r.AttachSteps(st)
		return r
	}
	cases := []struct {
		name  string
		slots int
		recs  []record.Record
		want  []float64 // per request, in the order of recs and their steps
	}{
		{"no slot count", 0, []record.Record{req(0, 100, w), req(10, 50, w)}, nil},
		{"one slot, three at once: each waits for the one before", 1,
			[]record.Record{req(0, 100, w), req(1, 180, w), req(2, 250, w)}, []float64{0, 99, 178}},
		{"two slots: the third waits for the first to end", 2,
			[]record.Record{req(0, 100, w), req(10, 300, w), req(20, 150, w)}, []float64{0, 0, 80}},
		{"first come first served, whatever the order of the records", 1,
			[]record.Record{req(20, 250, w), req(0, 100, w)}, []float64{80, 0}},
		{"a canary task went to another server", 1,
			[]record.Record{req(0, 100, record.PhaseCanary), req(10, 50, w)}, []float64{0, 0}},
		{"a request whose end was not seen holds no slot", 1,
			[]record.Record{req(0, -1, w), req(10, 50, w)}, []float64{0, 0}},
		{"each call of a multi-step task holds a slot", 1,
			[]record.Record{multi(0, 100, 150, 200), req(120, 170, w)}, []float64{0, 20, 0}},
		{"a request the replay starts after its end frees the slot at once", 1,
			[]record.Record{req(0, 100, w), req(10, 40, w), req(20, 130, w)}, []float64{0, 90, 80}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := slotWaits(c.recs, c.slots)
			if c.want == nil {
				if got != nil {
					t.Fatalf("got %v, want nil", got)
				}
				return
			}
			var reqs []*record.Record
			for i := range c.recs {
				reqs = append(reqs, c.recs[i].Requests()...)
			}
			if len(reqs) != len(c.want) {
				t.Fatalf("%d requests, want %d", len(reqs), len(c.want))
			}
			for i, q := range reqs {
				if g := got[q]; g != c.want[i] {
					t.Errorf("request %d: wait %.1f ms, want %.1f", i, g, c.want[i])
				}
			}
		})
	}
}
