package diagnose

import (
	"fmt"

	"github.com/pel-ladder/pel/evidence"
)

// Rules are evidence for the time budget: each rule declares which components of a task's
// time its finding explains (rule.explains), and the budget charges a component to the
// layer of the finding that explains it. No rule is named outside its own declaration.

// attributed is the explanation of component comp: the highest-ranked credible finding
// (at least ownerMinConfidence, not info) of the lowest tier whose rule explains comp in
// this run. ok is false when none does.
func attributed(found []ranked, comp int, b *budgetCtx, v *view) (layer evidence.Layer, name string, a attribution, ok bool) {
	best, bestTier := -1, 0
	for i, x := range found {
		if x.f.Confidence < ownerMinConfidence || x.f.Severity == evidence.SeverityInfo {
			continue
		}
		for _, at := range x.r.explains {
			if at.comp != comp || (at.when != nil && !at.when(b, v)) {
				continue
			}
			if best < 0 || at.tier < bestTier {
				best, bestTier, a = i, at.tier, at
			}
		}
	}
	if best < 0 {
		return "", "", attribution{}, false
	}
	x := found[best]
	return x.f.Layer, fmt.Sprintf(a.name, x.r.id), a, true
}

// explainsWhole reports whether a credible finding says the whole wait before the engine's
// processing was its queue.
func explainsWhole(found []ranked, comp int, b *budgetCtx, v *view) bool {
	for _, x := range found {
		if x.f.Confidence < ownerMinConfidence || x.f.Severity == evidence.SeverityInfo {
			continue
		}
		for _, at := range x.r.explains {
			if at.comp == comp && at.whole && (at.when == nil || at.when(b, v)) {
				return true
			}
		}
	}
	return false
}
