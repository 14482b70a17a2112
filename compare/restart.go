package compare

import (
	"math"

	"github.com/pel-ladder/pel/scrape"
)

// processStart is the standard Prometheus client gauge of the process's start time; an
// engine that exports it says outright when it restarted.
const processStart = "process_start_time_seconds"

// restartTracker finds, in one endpoint's samples given in time order, the samples where
// the engine behind it restarted, holding the counters of the sample before. A restart
// resets every monotonic counter together: it is seen when the exported process start time
// changes, or when most of the counter series that had counted something (counters and
// histogram counts present in both samples, previous value above zero) went down at once.
// One series going down is not a restart: engines type averages as counters (llama.cpp's
// n_busy_slots_per_decode is busy slots per decode call, which falls as often as it rises),
// and such a series says nothing about the process.
type restartTracker struct {
	prev      map[string]float64
	prevStart float64
}

// step takes the next sample and reports whether the engine restarted since the one before.
func (t *restartTracker) step(s *scrape.Sample) bool {
	cur := map[string]float64{}
	start := math.NaN()
	for _, fam := range s.Families {
		for _, met := range fam.Metrics {
			key := fam.Name + labelKey(met.Labels)
			switch {
			case fam.Name == processStart && met.V != nil:
				start = float64(*met.V)
			case fam.Type == "counter" && met.V != nil:
				cur[key] = float64(*met.V)
			case fam.Type == "histogram" && met.C != nil:
				cur[key+"_count"] = float64(*met.C)
			}
		}
	}
	for k, v := range cur {
		if math.IsNaN(v) {
			delete(cur, k)
		}
	}
	r := t.prev != nil && restarted(t.prev, cur, t.prevStart, start)
	t.prev, t.prevStart = cur, start
	return r
}

// restarted decides one step between two samples (see restartTracker).
func restarted(prev, cur map[string]float64, prevStart, start float64) bool {
	if !math.IsNaN(prevStart) && !math.IsNaN(start) && start != prevStart {
		return true
	}
	counted, down := 0, 0
	for k, p := range prev {
		v, ok := cur[k]
		if !ok || p <= 0 {
			continue
		}
		counted++
		if v < p {
			down++
		}
	}
	return counted > 0 && 2*down > counted
}
