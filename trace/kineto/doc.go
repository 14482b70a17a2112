// Package kineto reads PyTorch profiler (Kineto) traces: Chrome trace-event JSON, plain or
// gzip-compressed, as a stream.
//
// A hand-written scanner walks the document once and hands each trace event to a callback
// as a small typed Event (category, phase, name, timestamps in both exact nanoseconds and the
// float64 microseconds that Python would parse, and the few args the analyses use: stream,
// correlation, device, bytes). Nothing is kept between events, so a trace of hundreds of MB
// never exists in memory as generic maps; Load builds the compact timeline model on top.
// Unknown keys and values are skipped without allocation; python_function events are skipped
// before their args are parsed.
package kineto
