package report

import (
	"encoding/csv"
	"io"
	"strconv"

	"github.com/pel-ladder/pel/internal/scrub"
	"github.com/pel-ladder/pel/sweep"
)

// SweepCSV writes one row per point (sweep.csv): the figures of sweep.json's points, and
// whether the point is the knee or the capacity at the SLO. A latency the point has no
// sample of is an empty cell, never 0; every text cell goes through the one CSV escaper.
func SweepCSV(out io.Writer, r *sweep.Result) error {
	w := csv.NewWriter(out)
	w.Write([]string{"point", "mode", "load", "concurrency", "rate", "in_flight_mean", "requests", "warm_tasks", "accepted", "acceptance_rate",
		"error_rate", "goodput_rps", "throughput_rps", "output_tokens_per_s", "ttft_p50_ms", "ttft_p99_ms", "itl_p50_ms", "itl_p99_ms", "e2e_p99_ms",
		"cost_per_accepted_task", "replicas", "meets_slo", "slo_miss", "knee", "capacity_at_slo", "error"})
	for i, p := range r.Points {
		cost, meets := "", ""
		if p.CostPerAcceptedTask != nil {
			cost = ff(*p.CostPerAcceptedTask)
		}
		if p.MeetsSLO != nil {
			meets = strconv.FormatBool(*p.MeetsSLO)
		}
		ms := func(q string, v float64) string {
			if !p.Measured(q) {
				return ""
			}
			return ff(v)
		}
		knee := r.Knee != nil && r.Knee.Index == i
		capa := r.Capacity != nil && r.Capacity.Found && r.Capacity.Point == p.Name
		w.Write([]string{scrub.CSVCell(p.Name), scrub.CSVCell(r.Mode), ff(p.Load), strconv.Itoa(p.Concurrency), ff(p.Rate), ff(p.InFlightMean), strconv.Itoa(p.Requests),
			strconv.Itoa(p.WarmTasks), strconv.Itoa(p.Accepted), ff(p.AcceptanceRate), ff(p.ErrorRate), ff(p.GoodputRPS), ff(p.ThroughputRPS),
			ff(p.OutputTokensPS), ms(sweep.QTTFT, p.TTFTP50), ms(sweep.QTTFT, p.TTFTP99), ms(sweep.QITL, p.ITLP50), ms(sweep.QITL, p.ITLP99), ms(sweep.QE2E, p.E2EP99),
			cost, strconv.Itoa(p.Replicas), meets, scrub.CSVCell(p.SLOMiss), strconv.FormatBool(knee), strconv.FormatBool(capa), scrub.CSVCell(p.Error)})
	}
	w.Flush()
	return w.Error()
}
