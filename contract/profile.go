package contract

import (
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Profiler controls: how pel run starts and stops an engine's profiler (package profiling).
const (
	ProfileVLLM    = "vllm"    // POST /start_profile, POST /stop_profile on the target
	ProfileSGLang  = "sglang"  // POST /start_profile (JSON body), POST /stop_profile on the target
	ProfileCommand = "command" // run the block's start and stop argv
)

// MaxProfileArgs bounds a profile command's argv (count and bytes of each argument).
const (
	MaxProfileArgs     = 64
	MaxProfileArgBytes = 4096
)

// Profile is the contract's profile block: a profiling window inside a run, At after the
// load starts and For long, opened and closed with the engine's own profiler control.
//
// It is not part of the workload's identity (left out of Canonical and the sha256): it
// says what was watched during the run, not what was sent, so a profiled run and a plain
// run of one contract compare. Its overhead on the workload is measured and labelled
// (package profiling), never hidden.
type Profile struct {
	// Set: the run has a profiling window (a profile block, or pel run --profile-at).
	Set bool
	At  time.Duration
	For time.Duration
	// Control is ProfileVLLM (default), ProfileSGLang or ProfileCommand.
	Control string
	// Start and Stop are the argv of a command control (no shell).
	Start, Stop []string
	// Trace is the trace file the profiler writes, or the directory it writes into (the
	// newest file there written during the window is read); empty: no trace is read.
	Trace string
	// IncludeInWarm keeps the tasks that overlapped the window in the warm figures
	// (default: they form a phase of their own, "profiled").
	IncludeInWarm bool
}

// Check validates a profile (from the contract or from flags); the message names the
// field as the contract spells it.
func (p *Profile) Check() error {
	if !p.Set {
		return nil
	}
	if p.For <= 0 {
		return fmt.Errorf("profile.for: the window needs a positive length (like 10s)")
	}
	switch p.Control {
	case "":
		p.Control = ProfileVLLM
	case ProfileVLLM, ProfileSGLang, ProfileCommand:
	default:
		return fmt.Errorf("profile.control: unknown control %q (want %s|%s|%s)", p.Control, ProfileVLLM, ProfileSGLang, ProfileCommand)
	}
	if p.Control == ProfileCommand {
		for _, a := range []struct {
			name string
			argv []string
		}{{"start", p.Start}, {"stop", p.Stop}} {
			if len(a.argv) == 0 || strings.TrimSpace(a.argv[0]) == "" {
				return fmt.Errorf("profile.%s: a command control needs the %s command's argv (a list: [program, arg...])", a.name, a.name)
			}
			if len(a.argv) > MaxProfileArgs {
				return fmt.Errorf("profile.%s: %d arguments, over pel's bound of %d", a.name, len(a.argv), MaxProfileArgs)
			}
			for _, s := range a.argv {
				if len(s) > MaxProfileArgBytes {
					return fmt.Errorf("profile.%s: an argument of %d bytes, over pel's bound of %d", a.name, len(s), MaxProfileArgBytes)
				}
			}
		}
	} else if len(p.Start) > 0 || len(p.Stop) > 0 {
		return fmt.Errorf("profile.start/stop: only a command control runs commands (control: %s calls the engine's endpoints)", p.Control)
	}
	return nil
}

func (d *decoder) profile(n *yaml.Node, path string, p *Profile) {
	*p = Profile{Set: true}
	before := len(d.errs)
	m := d.mapping(n, path)
	if m == nil {
		return
	}
	if !m.duration("at", &p.At) && !m.has("at") {
		m.missing("at")
	}
	if m.duration("for", &p.For) && p.For == 0 {
		m.errf("for", "must be positive")
	} else if !m.has("for") {
		m.missing("for")
	}
	if m.str("control", &p.Control) {
		switch p.Control {
		case ProfileVLLM, ProfileSGLang, ProfileCommand:
		default:
			m.errf("control", "unknown control %q (want %s|%s|%s)", p.Control, ProfileVLLM, ProfileSGLang, ProfileCommand)
		}
	}
	argv := func(key string) []string {
		items, ok := m.seq(key)
		if !ok {
			return nil
		}
		out := make([]string, 0, len(items))
		for _, it := range items {
			if it.Kind != yaml.ScalarNode {
				m.errf(key, "want a list of strings (the argv), got %s in it", kindName(it))
				return nil
			}
			out = append(out, it.Value)
		}
		return out
	}
	p.Start, p.Stop = argv("start"), argv("stop")
	m.str("trace", &p.Trace)
	m.bool("include_in_warm", &p.IncludeInWarm)
	if len(d.errs) == before {
		if err := p.Check(); err != nil {
			m.errf("", "%s", strings.TrimPrefix(err.Error(), "profile."))
		}
	}
	m.finish()
}
