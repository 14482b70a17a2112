package record

import "fmt"

// checkBounds refuses a record read from a file whose counts no run of pel writes: the
// client clamps every token count to MaxTokens and keeps at most MaxChunkTimings timings,
// so a line beyond them is not pel's (or was edited), and the analysis must not size a
// structure or a loop by it (records claiming 2^62 tokens would hold pel compare for
// minutes and over a GB).
func (r *Record) checkBounds() error {
	for _, c := range []struct {
		name string
		v    int
	}{{"prompt_tokens", r.PromptTokens}, {"output_tokens", r.OutputTokens}, {"cached_prompt_tokens", r.CachedPromptTokens}, {"sent_prompt_tokens", r.SentPromptTokens}} {
		if c.v < 0 || c.v > MaxTokens {
			return fmt.Errorf("%s %d is outside 0..%d (record.MaxTokens): not a record pel writes", c.name, c.v, MaxTokens)
		}
	}
	// One event's count is clamped by the writer as usage is: an event of more tokens than
	// any context holds is no server's.
	for i, k := range r.ChunkTokens {
		if k < 0 || k > MaxTokens {
			return fmt.Errorf("chunk_tokens[%d] %d is outside 0..%d (record.MaxTokens): not a record pel writes", i, k, MaxTokens)
		}
	}
	if len(r.ChunkUS) > MaxChunkTimings || len(r.ChunkTokens) > MaxChunkTimings {
		return fmt.Errorf("%d chunk timings, over %d (record.MaxChunkTimings): not a record pel writes", max(len(r.ChunkUS), len(r.ChunkTokens)), MaxChunkTimings)
	}
	return nil
}
