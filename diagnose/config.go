package diagnose

import (
	"strings"

	"github.com/pel-ladder/pel/evidence"
)

// setting reads a boolean the engine reported of its configuration: on, and whether it
// was reported at all.
func (v *view) setting(key string) (on, known bool) {
	s, ok := v.config[key]
	if !ok {
		return false, false
	}
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "1", "on", "yes", "enabled":
		return true, true
	case "false", "0", "off", "no", "disabled":
		return false, true
	}
	return false, false
}

// chunkedPrefillAdvice makes a prediction that turns chunked prefill on honest about the
// engine's configuration: nothing is predicted from turning on what is on, and where the
// engine did not say, the prediction is conditional on its being off.
func chunkedPrefillAdvice(v *view, h *hit) {
	on, known := v.setting(evidence.ConfigChunkedPrefill)
	switch {
	case known && on:
		h.predicted = nil
		h.cond = ""
		h.prediction = "Chunked prefill is already on (the engine reports it): turning it on changes nothing. If long prefills still fill the steps, capping each one's share of a step (" + profileOf(v.engine).Knobs.ChunkCap + ") lets short prompts in; the head-of-line ratio should then fall by half."
		h.confNote = joinNote(h.confNote, "chunked prefill is on by the engine's own report")
	case !known:
		h.cond = "chunked prefill is off (the engine does not report it) and " + h.cond
	}
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
