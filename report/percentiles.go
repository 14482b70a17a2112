package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
	"github.com/pel-ladder/pel/stats"
)

// PercentilesCSVFile is the file pel report --csv writes the percentile table to.
const PercentilesCSVFile = "percentiles.csv"

// PercentileTable lists latency percentiles a run was asked for (--percentiles, or the
// contract's percentiles key) beyond the p50/p95/p99 evidence.json holds: over the same
// tasks stage 1 summarizes (the warm phase's completed tasks; every phase's when there is
// no warm phase), with the same per-task definitions and package stats' estimator, so its
// p50, p95 and p99 are evidence.json's.
type PercentileTable struct {
	Phase       string          `json:"phase"`
	Percentiles []float64       `json:"percentiles"`
	Rows        []PercentileRow `json:"rows"`
}

// PercentileRow is one metric's percentiles, in ms, in the order of the table's.
type PercentileRow struct {
	Metric string    `json:"metric"`
	N      int       `json:"n"`
	Ms     []float64 `json:"ms"`
}

var percentileMetrics = []string{"TTFT", "TTFT from sent", "ITL", "TPOT", "E2E"}

// Percentiles computes the table from the run's task records (rundir.Dir.Each).
func Percentiles(each func(func(*record.Record) error) error, ps []float64) (*PercentileTable, error) {
	type set struct{ d [5]*stats.Dist }
	newSet := func() *set {
		s := &set{}
		for i := range s.d {
			s.d[i] = stats.NewDist()
		}
		return s
	}
	warm, all := newSet(), newSet()
	sawWarm := false
	err := each(func(r *record.Record) error {
		if r.Step != nil || r.Phase == record.PhaseCanary {
			return nil
		}
		sets := []*set{all}
		if r.Phase == record.PhaseWarm {
			sawWarm = true
			sets = append(sets, warm)
		}
		if !r.OK() {
			return nil
		}
		for _, s := range sets {
			if v, ok := r.TTFT(); ok {
				s.d[0].Add(v)
			}
			if v, ok := r.TTFTFromSent(); ok {
				s.d[1].Add(v)
			}
			r.ITLRuns(s.d[2].AddN)
			if v, ok := r.TPOT(); ok {
				s.d[3].Add(v)
			}
			if v, ok := r.E2E(); ok {
				s.d[4].Add(v)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	t := &PercentileTable{Phase: "all phases", Percentiles: ps}
	use := all
	if sawWarm {
		t.Phase, use = record.PhaseWarm, warm
	}
	for i, m := range percentileMetrics {
		d := use.d[i]
		row := PercentileRow{Metric: m, N: d.N(), Ms: make([]float64, len(ps))}
		for j, p := range ps {
			if d.N() > 0 {
				row.Ms[j] = d.QuantileMs(p)
			}
		}
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}

// PercentileName is "p99.9" for 99.9.
func PercentileName(p float64) string { return "p" + strconv.FormatFloat(p, 'f', -1, 64) }

// Text writes the table for the terminal.
func (t *PercentileTable) Text(w io.Writer) error {
	fmt.Fprintf(w, "\nPERCENTILES (%s, ms)\n", t.Phase)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "\tn\t")
	for _, p := range t.Percentiles {
		fmt.Fprintf(tw, "%s\t", PercentileName(p))
	}
	fmt.Fprintln(tw)
	for _, r := range t.Rows {
		fmt.Fprintf(tw, "%s\t%d\t", r.Metric, r.N)
		for _, v := range r.Ms {
			if r.N == 0 {
				fmt.Fprint(tw, "-\t")
			} else {
				fmt.Fprintf(tw, "%s\t", num(v))
			}
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// CSV writes the table as CSV: metric, n, then one column per percentile (ms).
func (t *PercentileTable) CSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	head := []string{"metric", "phase", "n"}
	for _, p := range t.Percentiles {
		head = append(head, PercentileName(p)+"_ms")
	}
	cw.Write(head)
	for _, r := range t.Rows {
		row := []string{r.Metric, t.Phase, strconv.Itoa(r.N)}
		for _, v := range r.Ms {
			if r.N == 0 {
				row = append(row, "")
			} else {
				row = append(row, ff(v))
			}
		}
		cw.Write(row)
	}
	cw.Flush()
	return cw.Error()
}

// JSONWithPercentiles writes the evidence with the percentile table as one more key,
// "percentiles" (for when a table was asked for: the plain JSON stays evidence.json).
func JSONWithPercentiles(w io.Writer, ev *evidence.Evidence, t *PercentileTable) error {
	var b bytes.Buffer
	if err := ev.Encode(&b); err != nil {
		return err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b.Bytes(), &m); err != nil {
		return err
	}
	raw, err := json.Marshal(t)
	if err != nil {
		return err
	}
	m["percentiles"] = raw
	return indented(w, m)
}
