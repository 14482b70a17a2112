// Package output runs pel as a process against pel sim and checks what a person reads: a
// figure with no samples is "not measured" everywhere, a partial run says so first, the
// short summaries, and the messages of common mistakes. It holds only tests.
package output
