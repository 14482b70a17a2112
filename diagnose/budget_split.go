package diagnose

import "github.com/pel-ladder/pel/record"

// TaskSplit is one completed task's (or one call's) own budget, in ms: the measured times
// and the components that make them up, grouped as an engine reports its own phases.
type TaskSplit struct {
	Rec *record.Record
	// TTFTMs is scheduled → first token and DecodeMs first → last token, as measured.
	TTFTMs, DecodeMs float64
	// PrefillMs is the prefill (at its floor and above it); QueueMs the engine's queue
	// (the part the load explains and the rest); OutsideMs the time outside the engine.
	PrefillMs, QueueMs, OutsideMs float64
	// SlotWaitMs is the task's wait for one of the engine's slots as the client's records
	// replay it (budget_slots.go), before the budget fits it into the task's time; 0 when
	// the engine reports no slot count.
	SlotWaitMs float64
	// TTFTPartsMs and DecodePartsMs add up each part's components.
	TTFTPartsMs, DecodePartsMs float64
	// Components maps each non-zero component's name to its ms.
	Components map[string]float64
}

// eachTask hands one task's budget to EachTaskBudget.
func (o *Options) eachTask(r *record.Record, t *taskTime) {
	if o.EachTaskBudget == nil {
		return
	}
	s := TaskSplit{Rec: r, TTFTMs: t.ttft, DecodeMs: t.decode, Components: map[string]float64{},
		PrefillMs: t.ms[cPrefillFloor] + t.ms[cPrefillOver], QueueMs: t.ms[cQueueCap] + t.ms[cQueue], OutsideMs: t.ms[cOutside], SlotWaitMs: t.slotWait}
	for i, m := range t.ms {
		switch {
		case i <= cTTFTRest:
			s.TTFTPartsMs += m
		case i <= cDecodeRest:
			s.DecodePartsMs += m
		}
		if m != 0 {
			s.Components[compDefs[i].name] += m
		}
	}
	o.EachTaskBudget(s)
}
