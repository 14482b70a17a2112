package diagnose

import (
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/record"
)

// RollbackTriggers derives rollback triggers from the warm tasks of recs exactly as
// Diagnose does (nil and the reason when there are too few): an interleaved canary run
// derives them from its own baseline side while it runs (package canary).
func RollbackTriggers(recs []record.Record, opts Options) ([]evidence.Trigger, string) {
	o := opts
	o.defaults()
	return rollbackTriggers(recs, &o)
}
