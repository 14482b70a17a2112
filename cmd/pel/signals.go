package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/pel-ladder/pel/internal/hardstop"
)

// stopBound is how long a command that only reads and analyses may go on after Ctrl-C or
// SIGTERM before pel stops it: its readers honour the context, but a read can block where
// no context reaches (a FIFO given as a file, a query inside SQLite), and such a command
// has no finished record to lose. pel run, sweep, demo and sim stop by their own grace
// periods (every finished record is written), so they are not cut; for every command a
// second Ctrl-C stops pel at once.
const stopBound = 2 * time.Second

// hardStopBound is how long pel, stopping at once, spends writing the records of its tasks
// in flight: one unbuffered append each, which a healthy disk does in microseconds; the
// bound only keeps a hung disk from holding the process.
const hardStopBound = time.Second

// analyses are the commands stopped stopBound after a signal.
var analyses = map[string]bool{
	"analyze": true, "report": true, "compare": true, "trace": true, "merge": true,
	"canary": true, "contract": true, "k8s": true, "pack": true, "prune": true,
}

// watchStop waits for a signal and then makes sure pel stops: stopBound later for an
// analysis (args[0] names the command), at once on a second signal. It returns only by
// exiting; main's own exit wins when the command returns first.
func watchStop(args []string) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	<-sigs // the first: signal.NotifyContext cancels the command's context too
	var bound <-chan time.Time
	name := ""
	if len(args) > 0 {
		name = args[0]
	}
	if analyses[name] {
		bound = time.After(stopBound)
	}
	select {
	case <-sigs:
		fmt.Fprintln(os.Stderr, "pel: interrupted again: stopping now")
	case <-bound:
		fmt.Fprintf(os.Stderr, "pel: interrupted; %s did not stop within %s: stopping now\n", name, stopBound)
	}
	// Every task sent keeps a record: those still in flight are written as cancelled.
	if n, all := hardstop.Run(hardStopBound); n > 0 || !all {
		fmt.Fprintf(os.Stderr, "pel: %d task(s) in flight recorded as cancelled", n)
		if !all {
			fmt.Fprintf(os.Stderr, " (the rest not within %s)", hardStopBound)
		}
		fmt.Fprintln(os.Stderr)
	}
	os.Exit(exitInterrupted)
}
