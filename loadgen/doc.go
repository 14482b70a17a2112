// Package loadgen drives an OpenAI-compatible server under a workload schedule and turns
// every task into a record.Record.
//
// It holds three parts that are deliberately separate so each can be tested alone:
//
//   - the SSE parser (sse.go): a small event-stream reader over bufio, fuzzed (FuzzSSE);
//   - the client (client.go): one HTTP attempt of /v1/chat/completions or /v1/completions,
//     streaming or not, timed with an injected Clock, with the OpenAI error shapes decoded;
//   - the driver (driver.go): the pacer that sends on an absolute schedule (open loop) or
//     with N workers (closed loop), the retry loop, the client-side concurrency cap, the
//     acceptance hook, and the record sink.
//
// Why open loop: a slow server must never delay the next arrival, or the tool would measure
// its own waiting (coordinated omission) instead of the server. Every task that was due gets
// a record, including those cut by Ctrl-C (status cancelled), so failed work is never dropped
// from a denominator.
package loadgen
