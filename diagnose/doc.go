// Package diagnose turns an evidence package into a diagnosis: which layer limits accepted
// tasks, what evidence supports it, what a change should move, and what rollback thresholds
// a change must respect.
//
// It reads only the normalized signals and series of an evidence.Evidence (the vocabulary in
// evidence/signals.go) plus the client's task records; it never looks inside the simulated
// engine. Each rule (rules*.go, listed in catalog.go) is one symptom row of the ladder's
// catalog, with its thresholds as named constants that say why they sit where they do
// (rule.go). A rule that cannot see
// the evidence that would separate two layers lowers its confidence and names the missing
// source instead of guessing: a missing source may cost a verdict, never produce a confident
// wrong one.
//
// Stop conditions are computed: the owner finding is re-evaluated on each half of the warm
// window (stage 1 over that half's tasks, from package stats, and the series samples in it),
// its acceptance impact is counted from rejected tasks that coincide with the symptom in
// time and kind, and rollback triggers come from bootstrap confidence intervals of the
// baseline's own distributions.
//
// The files form groups that use only the groups before them, so the data flows one way:
//
//   - inputs: options.go (the contract's objectives and system block), confidence.go (the
//     one confidence scale), tasks.go, view.go, series.go (what the rules see), impact.go
//     (which rejected tasks a symptom explains), objectives.go (stage 1's judgement of each
//     objective), engine.go and floors.go (the engine's table, the physical floors);
//   - the task's time: budget_task.go splits one task's time into components;
//   - evidence: rule.go (what a rule is and what it explains), attribution.go, config.go,
//     rules*.go (the symptoms), catalog.go (the catalog, in tie-breaking order);
//   - the budget: budget_errors.go, budget_slots.go, budget_spans.go, budget_load.go,
//     budget_steps.go, budget.go (the excess over the objectives, charged to layers),
//     budget_owner.go (the budget's and the floor's own findings);
//   - the decision: decide.go (one pure function over the findings, the budget and the
//     objectives), halves.go (reproduction), rollback.go and triggers_export.go;
//   - diagnose.go runs them in that order.
package diagnose
