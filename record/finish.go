package record

// Error classes of an answer that arrived whole but did not end as a completion: the server
// said it ended in error, said it aborted, or never said why it ended. Each is its own class
// (Record.ErrorClass), so a report counts them apart from cut streams (ErrIncomplete) and
// from timeouts (ErrTimeout).
const (
	// ErrFinishError: finish_reason "error": the server ended the answer because it failed.
	ErrFinishError = "finish_error"
	// ErrAborted: finish_reason "abort": the engine aborted the request (vLLM and SGLang
	// send it when a request is cancelled or evicted inside the engine).
	ErrAborted = "aborted"
	// ErrNoFinish: the answer ended without saying why (finish_reason null or absent, even
	// with [DONE]), or with a finish_reason no serving API defines.
	ErrNoFinish = "no_finish_reason"
)

// FinishReasonComplete reports whether finish_reason fr says a completion ended normally:
// OpenAI's stop, length, tool_calls and function_call (its deprecated form), and TGI's
// eos_token and stop_sequence. content_filter is complete too, but fails the task's checks
// (the contract judges it, see FinishContentFilter).
func FinishReasonComplete(fr string) bool {
	switch fr {
	case "stop", "length", "tool_calls", "function_call", "eos_token", "stop_sequence", FinishContentFilter:
		return true
	}
	return false
}

// FinishContentFilter is the finish_reason of an answer the server's content filter cut or
// withheld: complete as an exchange, not accepted as an answer.
const FinishContentFilter = "content_filter"

const (
	// FlagUsageContradicts: the server's usage contradicts what the stream carried (usage
	// claims tokens and no content arrived; a running usage went down; fewer completion
	// tokens than content events, each of which carries at least one token). The record's
	// counts are the stream's own, not the usage's.
	FlagUsageContradicts = "usage_contradicts_stream"
	// FlagNotStreamed: pel asked for a stream and the server answered with one JSON body
	// (it ignores "stream": true, or a proxy on the way collects the answer): its TTFT is the
	// body's arrival, and it has no inter-token latency and no TPOT. An answer the contract
	// asked for unstreamed (a step's no_stream) has the same timings and no flag.
	FlagNotStreamed = "not_streamed"
)
