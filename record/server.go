package record

// ServerTimings are the engine's own per-request timings, when the response carries them
// (llama.cpp's "timings" object on its final chunk or response: prompt_ms and
// predicted_ms). They exclude any wait before the engine started the request (llama.cpp:
// the wait for a free slot and for an HTTP worker thread), so client TTFT minus PrefillUS is
// the time the request spent queued or in transit.
type ServerTimings struct {
	PrefillUS int64 `json:"prefill_us"` // prompt processing (llama.cpp timings.prompt_ms)
	DecodeUS  int64 `json:"decode_us"`  // generation (llama.cpp timings.predicted_ms)
	// PromptN is the number of prompt tokens the engine actually processed (llama.cpp
	// timings.prompt_n): fewer than usage.prompt_tokens when a cached prefix was reused.
	PromptN int `json:"prompt_n,omitempty"`
}

// EngineSpan is one request's timings from the engine's own trace span (OTLP
// gen_ai.latency.*: time_in_queue, time_in_model_prefill, time_in_model_decode,
// time_to_first_token, all from the engine's arrival), joined to its record by trace id. It
// is derived when a run is analysed, never stored in requests.jsonl; 0 is "not sent".
type EngineSpan struct {
	QueueUS, PrefillUS, DecodeUS, TTFTUS int64
}
