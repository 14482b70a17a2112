// Package version says which pel build is running, from what the Go toolchain stamps into
// every binary (runtime/debug.ReadBuildInfo): the module version `go install …@vX` records,
// and the VCS commit a build from a clone records.
package version

import (
	"runtime/debug"
	"strings"
)

// Info is the running build.
type Info struct {
	Version  string // module version ("v0.4.0"), or "(devel)" for a build from a clone
	Commit   string // VCS revision, when the build recorded one
	Time     string // the commit's time (RFC 3339), when recorded
	Modified bool   // the work tree had changes the commit does not hold
	Go       string // the Go toolchain that built it
}

// Read is the running build's Info.
func Read() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{Version: "(unknown)"}
	}
	in := Info{Version: bi.Main.Version, Go: bi.GoVersion}
	if in.Version == "" {
		in.Version = "(devel)"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Commit = s.Value
		case "vcs.time":
			in.Time = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	return in
}

// String is one line: "v0.4.0", "(devel) commit 1a2b3c4d5e6f (modified)".
func (in Info) String() string {
	var b strings.Builder
	b.WriteString(in.Version)
	if in.Commit != "" {
		c := in.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		b.WriteString(" commit " + c)
		if in.Modified {
			b.WriteString(" (modified)")
		}
	}
	return b.String()
}
