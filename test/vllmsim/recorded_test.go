package vllmsim_test

import (
	"path/filepath"
	"testing"

	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/internal/pelbin"
	"github.com/pel-ladder/pel/test/gateway"
)

// TestRecorded re-diagnoses runs against llm-d-inference-sim kept in testdata/ (the
// contract, pel's request records and the emulator's /metrics samples, as pel run wrote
// them in the live cases above), so every CI run holds pel to the emulator's real bytes
// without building it. Each is checked by its live case's own expectation, written from
// the cause that case injects.
func TestRecorded(t *testing.T) {
	for _, tc := range []struct {
		dir   string
		check func(*testing.T, *evidence.Evidence)
	}{
		{"queue", checkQueue},        // TestEngineQueue: one slot, four in flight
		{"delay", checkDelay},        // TestGatewayDelay: a 400 ms hold in front of eight free slots
		{"shed", gateway.CheckSheds}, // TestGatewaySheds: every fourth request 503 in front of it
	} {
		t.Run(tc.dir, func(t *testing.T) {
			dir, out := pelbin.Reanalyze(t, pelBin, filepath.Join("testdata", tc.dir))
			tc.check(t, readEvidence(t, dir, out))
		})
	}
}
