package main

import (
	"fmt"
	"io"
	"time"
)

// The one -o rule of every command that writes a run directory (run, sweep, demo): -o DIR
// names a directory that must be absent or empty (runs never mix); without -o the command
// creates ./pel-<command>-<UTC yyyymmdd-hhmmss> in the current directory and says so on
// stderr before it starts.

// outFlagHelp is the -o flag's help, the same for every such command.
const outFlagHelp = "directory to write (absent or empty; default ./pel-%s-<UTC time>)"

// outDir returns o, or the default directory for cmd, announced on w.
func outDir(w io.Writer, cmd, o string) string {
	if o != "" {
		return o
	}
	d := "pel-" + cmd + "-" + time.Now().UTC().Format("20060102-150405")
	fmt.Fprintf(w, "pel %s: no -o given: writing to ./%s\n", cmd, d)
	return d
}
