package report

import (
	"encoding/csv"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/internal/scrub"
	"github.com/pel-ladder/pel/record"
)

// Files pel report --csv DIR writes.
const (
	TasksCSVFile   = "tasks.csv"
	SummaryCSVFile = "summary.csv"
)

func ff(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// msOf is a duration in milliseconds, or "" when the record lacks it.
func msOf(d time.Duration, ok bool) string {
	if !ok {
		return ""
	}
	return ff(float64(d) / float64(time.Millisecond))
}

// TasksCSV writes one row per task of requests.jsonl, with the latencies each record
// defines (record's own accessors: TTFT and E2E from the scheduled time, TPOT, schedule
// lag) — spreadsheet-ready, nothing aggregated.
func TasksCSV(w io.Writer, recs []record.Record) error {
	return TasksCSVEach(w, func(f func(*record.Record) error) error {
		for i := range recs {
			if err := f(&recs[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// TasksCSVEach is TasksCSV over records given one at a time (a run of any length is
// written in bounded memory).
func TasksCSVEach(w io.Writer, each func(func(*record.Record) error) error) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"seq", "id", "task", "phase", "status", "error_class", "accepted", "reasons", "in_flight", "attempts",
		"scheduled_at", "ttft_ms", "ttft_from_sent_ms", "tpot_ms", "e2e_ms", "schedule_lag_ms", "client_queue_ms",
		"prompt_tokens", "output_tokens", "token_source", "cached_prompt_tokens", "finish_reason", "http_status", "error"})
	err := each(func(r *record.Record) error {
		ttft, ok1 := r.TTFT()
		ttfs, ok2 := r.TTFTFromSent()
		tpot, ok3 := r.TPOT()
		e2e, ok4 := r.E2E()
		lag, ok5 := r.ScheduleLag()
		http := ""
		if r.HTTPStatus != 0 {
			http = strconv.Itoa(r.HTTPStatus)
		}
		// Text cells come from outside (the records a server's answers filled): neutralised
		// against spreadsheet formulas (scrub.CSVCell).
		text := scrub.CSVCells(r.ID, r.Task, r.Phase, r.Status, r.ErrorClass, strings.Join(r.Reasons, "; "), r.TokenSource, r.FinishReason, r.Error)
		cw.Write([]string{strconv.Itoa(r.Seq), text[0], text[1], text[2], text[3], text[4], strconv.FormatBool(r.Accepted),
			text[5], strconv.Itoa(r.InFlight), strconv.Itoa(r.Attempts), r.ScheduledAt.UTC().Format(time.RFC3339Nano),
			msOf(ttft, ok1), msOf(ttfs, ok2), msOf(tpot, ok3), msOf(e2e, ok4), msOf(lag, ok5), ff(float64(r.ClientQueueUS) / 1000),
			strconv.Itoa(r.PromptTokens), strconv.Itoa(r.OutputTokens), text[6], strconv.Itoa(r.CachedPromptTokens),
			text[7], http, text[8]})
		return cw.Error()
	})
	if err != nil {
		return err
	}
	cw.Flush()
	return cw.Error()
}

// SummaryCSV writes the workload's summary tables as evidence.json holds them: the warm
// headline ("all"), then one row per phase, task type and concurrency band.
func SummaryCSV(w io.Writer, ev *evidence.Evidence) error {
	cw := csv.NewWriter(w)
	head := []string{"table", "name", "requests", "accepted", "failed", "cancelled", "acceptance_rate", "error_rate", "retry_rate",
		"goodput_rps", "throughput_rps", "output_tokens_per_s", "cost_per_accepted_task"}
	for _, m := range []string{"ttft", "ttft_from_sent", "itl", "tpot", "e2e", "schedule_lag"} {
		for _, q := range []string{"n", "p50", "p95", "p99", "mean"} {
			head = append(head, m+"_"+q+"_ms")
		}
	}
	cw.Write(head)
	row := func(table, name string, s evidence.Summary) {
		c := ""
		if s.CostPerAcceptedTask != nil {
			c = ff(*s.CostPerAcceptedTask)
		}
		out := []string{table, scrub.CSVCell(name), strconv.Itoa(s.Requests), strconv.Itoa(s.Accepted), strconv.Itoa(s.Failed), strconv.Itoa(s.Cancelled),
			ff(s.AcceptanceRate), ff(s.ErrorRate), ff(s.RetryRate), ff(s.GoodputRPS), ff(s.ThroughputRPS), ff(s.OutputTokensPerS), c}
		l := s.Latency
		for _, q := range []evidence.Quantiles{l.TTFTms, l.TTFTFromSentMs, l.ITLms, l.TPOTms, l.E2Ems, l.ScheduleLagMs} {
			if q.N == 0 { // not measured: empty cells, never a 0 a spreadsheet would average in
				out = append(out, "0", "", "", "", "")
				continue
			}
			out = append(out, strconv.Itoa(q.N), ff(q.P50), ff(q.P95), ff(q.P99), ff(q.Mean))
		}
		cw.Write(out)
	}
	wl := ev.Workload
	row("all", "warm", wl.Summary)
	for _, k := range sortedKeys(wl.ByPhase) {
		row("phase", k, wl.ByPhase[k])
	}
	for _, k := range sortedKeys(wl.ByTaskType) {
		row("task_type", k, wl.ByTaskType[k])
	}
	bands := append([]evidence.BandSummary(nil), wl.ByBand...)
	sort.SliceStable(bands, func(i, j int) bool { return bands[i].Lo < bands[j].Lo })
	for _, b := range bands {
		row("band", b.Band, b.Summary)
	}
	cw.Flush()
	return cw.Error()
}
