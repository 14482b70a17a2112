package loadgen

import "github.com/pel-ladder/pel/record"

// Bounds on what one server response can make pel hold or do. Each is a counted, reported
// limit: the task fails or is flagged with the bound named in its error, never a crash and
// never a silent drop. Record-level bounds (record.MaxTokens, record.MaxChunkTimings) live
// with the record.
const (
	// MaxResponseHeaderBytes bounds a response's status line and headers (net/http's
	// Transport has the same knob). OpenAI-compatible servers send under 2 KiB; a header
	// that never ends would otherwise grow in memory until the process dies.
	MaxResponseHeaderBytes = 1 << 20

	// MaxStreamBytes bounds the bytes read from one response body: 256 MiB is ~5x a 128k-
	// token stream with one event per token (~400 bytes each). A longer stream is cut and
	// the task fails (incomplete) naming the bound, so an endless stream ends even without
	// a timeout.
	MaxStreamBytes = 256 << 20

	// MaxJSONBody bounds a non-streamed completion: a million tokens of text is ~4 MiB.
	MaxJSONBody = 16 << 20

	// MaxErrorBody bounds how much of an error response is read (after gzip decoding, if the
	// server compressed it although pel does not ask for compression).
	MaxErrorBody = 64 << 10

	// MaxKeptOutput bounds the generated text kept for acceptance checks and --keep-text
	// (its length is always counted). Beyond it the record is flagged record_truncated.
	MaxKeptOutput = 8 << 20

	// maxChunkTimings is record.MaxChunkTimings, re-exported for the stream reader.
	maxChunkTimings = record.MaxChunkTimings
)

// Plausible usage. A server's token counts are believed only within these bounds; beyond
// them the task fails as invalid (record.ErrInvalid) with the figures in its error, and the
// counts are clamped before any per-token loop.
const (
	// maxTokensSlack: completion_tokens may exceed max_tokens by this factor (plus
	// maxTokensPad) before it is implausible. Servers stop at max_tokens; some count an EOS
	// or special token more. Twice the limit is no rounding difference.
	maxTokensSlack = 2
	maxTokensPad   = 16
	// PromptTruncatedRatio: usage.prompt_tokens below this share of the prompt pel planned
	// means the server cut the prompt. Chat templates only add tokens and tokenizers other
	// than GPT's and Llama-3's split pel's one-token words into more, not fewer; a few
	// percent of difference is tokenization, 10% missing is truncation.
	PromptTruncatedRatio = 0.9
)
