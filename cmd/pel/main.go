// Command pel is the Performance Evidence Ladder CLI. It is deliberately thin: it parses
// flags, calls the packages that do the work, and maps errors to exit codes
// (0 done, 1 the run or the verdict failed, 2 bad usage or input, 130 interrupted).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/pel-ladder/pel/internal/scrub"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go watchStop(os.Args[1:]) // signals.go
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	interrupted := ctx.Err() != nil // before stop(), which cancels ctx too
	stop()
	os.Exit(finalCode(interrupted, err, os.Stderr))
}

// exitInterrupted is the exit status of any command stopped by Ctrl-C or SIGTERM, whatever
// it managed to write before (pel run writes its whole run directory): 128 + SIGINT, the
// shell's convention, so a script can tell "stopped" from "done" (0) and "failed" (1).
const exitInterrupted = 130

func finalCode(interrupted bool, err error, stderr io.Writer) int {
	code := exitCode(err, stderr)
	if interrupted {
		fmt.Fprintln(stderr, "pel: interrupted")
		return exitInterrupted
	}
	return code
}

// exitErr carries an exit code; see usageError and failError.
type exitErr struct {
	code int
	err  error
}

func (e *exitErr) Error() string { return e.err.Error() }
func (e *exitErr) Unwrap() error { return e.err }

// usageError marks bad usage or input (exit 2).
func usageError(err error) error {
	if err == nil {
		return nil
	}
	return &exitErr{2, err}
}

// usageErrorf is usageError(fmt.Errorf(...)).
func usageErrorf(format string, a ...any) error { return usageError(fmt.Errorf(format, a...)) }

// failError marks a run or verdict that failed (exit 1).
func failError(err error) error {
	if err == nil {
		return nil
	}
	return &exitErr{1, err}
}

func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	// Errors can quote servers and files: no terminal escapes reach the terminal.
	fmt.Fprintln(stderr, "pel:", scrub.Terminal(err.Error()))
	var ee *exitErr
	if errors.As(err, &ee) {
		return ee.code
	}
	return 1
}

// subcommands is filled by each command's file (init), so commands live apart.
var subcommands []func(*app) *cobra.Command

// app is what every command gets: its context and output streams.
type app struct {
	ctx            context.Context
	stdout, stderr io.Writer
}

// run is main without the process: testable end to end.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	a := &app{ctx: ctx, stdout: stdout, stderr: stderr}
	root := &cobra.Command{
		Use:   "pel",
		Short: "Performance Evidence Ladder: which layer limits accepted tasks, and what proves it",
		Long: `pel drives an LLM server under a workload contract, collects evidence in five stages
(request trace, GPU execution, kernels, serving scheduler & KV cache, distributed), and names
the layer that limits accepted tasks, with the evidence, a falsifiable prediction and a
rollback threshold.

Start with:  pel demo            (runs the ladder against the built-in simulated server)`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		if h := flagHint(c, err); h != "" {
			err = fmt.Errorf("%w (%s)", err, h)
		}
		return usageError(err)
	})
	for _, f := range subcommands {
		root.AddCommand(f(a))
	}
	cmd, err := root.ExecuteContextC(ctx)
	if err != nil {
		var ee *exitErr
		if !errors.As(err, &ee) && cmd != nil && isArgError(err) {
			if strings.Contains(err.Error(), " arg(s)") {
				// cobra's count alone ("accepts 1 arg(s), received 0") does not say which
				// arguments: the usage line does.
				return usageErrorf("%s: %v; usage: %s (%s --help for more)", cmd.Name(), err, cmd.UseLine(), cmd.CommandPath())
			}
			return usageError(err)
		}
	}
	return err
}

// isArgError recognises cobra's own usage errors (unknown command, wrong arg count).
func isArgError(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "accepts ", "requires ", "invalid argument"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}
