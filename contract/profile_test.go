package contract

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"
)

// The profile block: read, validated with file:line, and never hashed (a profiled run and
// a plain run of one contract compare).
func TestProfileBlock(t *testing.T) {
	const base = "name: p\nversion: 1\narrival: {process: poisson, rate: 1}\nduration: 60s\ntasks:\n  - {name: a, prompt_tokens: 8}\n"
	plain := mustParse(t, base)
	if plain.Profile.Set {
		t.Errorf("no block: %+v", plain.Profile)
	}
	for _, c := range []struct {
		name, src string
		want      Profile
		err       string
	}{
		{name: "vllm by default", src: "profile: {at: 30s, for: 10s}\n", want: Profile{Set: true, At: 30 * time.Second, For: 10 * time.Second, Control: ProfileVLLM}},
		{name: "sglang with a trace dir", src: "profile: {at: 0s, for: 1m, control: sglang, trace: /tmp/tr, include_in_warm: true}\n",
			want: Profile{Set: true, For: time.Minute, Control: ProfileSGLang, Trace: "/tmp/tr", IncludeInWarm: true}},
		{name: "command", src: "profile:\n  at: 5s\n  for: 5s\n  control: command\n  start: [nsys, start]\n  stop: [nsys, stop]\n",
			want: Profile{Set: true, At: 5 * time.Second, For: 5 * time.Second, Control: ProfileCommand, Start: []string{"nsys", "start"}, Stop: []string{"nsys", "stop"}}},
		{name: "no for", src: "profile: {at: 5s}\n", err: `c.yaml:7: profile: missing required key "for"`},
		{name: "zero for", src: "profile: {at: 5s, for: 0s}\n", err: "profile.for: must be positive"},
		{name: "no at", src: "profile: {for: 5s}\n", err: `profile: missing required key "at"`},
		{name: "bare number", src: "profile: {at: 5, for: 5s}\n", err: `profile.at: duration "5" needs a unit`},
		{name: "unknown control", src: "profile: {at: 5s, for: 5s, control: tgi}\n", err: `profile.control: unknown control "tgi" (want vllm|sglang|command)`},
		{name: "command without argv", src: "profile: {at: 5s, for: 5s, control: command, start: [x]}\n", err: "profile: stop: a command control needs the stop command's argv"},
		{name: "argv for vllm", src: "profile: {at: 5s, for: 5s, start: [x], stop: [y]}\n", err: "only a command control runs commands"},
		{name: "argv not strings", src: "profile: {at: 5s, for: 5s, control: command, start: [[x]], stop: [y]}\n", err: "profile.start: want a list of strings"},
		{name: "typo", src: "profile: {at: 5s, for: 5s, trac: x}\n", err: `profile.trac: unknown key (did you mean "trace"?)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Parse([]byte(base+c.src), "c.yaml")
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			p := got.Profile
			if p.Set != c.want.Set || p.At != c.want.At || p.For != c.want.For || p.Control != c.want.Control || p.Trace != c.want.Trace ||
				p.IncludeInWarm != c.want.IncludeInWarm || !slices.Equal(p.Start, c.want.Start) || !slices.Equal(p.Stop, c.want.Stop) {
				t.Errorf("got %+v, want %+v", p, c.want)
			}
			if got.SHA256() != plain.SHA256() || bytes.Contains(got.Canonical(), []byte("profile")) {
				t.Errorf("the profile block entered the hash: %s", got.Canonical())
			}
		})
	}
}

func TestProfileCheckBounds(t *testing.T) {
	long := strings.Repeat("x", MaxProfileArgBytes+1)
	many := make([]string, MaxProfileArgs+1)
	for i := range many {
		many[i] = "a"
	}
	for _, p := range []Profile{
		{Set: true, For: time.Second, Control: ProfileCommand, Start: []string{long}, Stop: []string{"y"}},
		{Set: true, For: time.Second, Control: ProfileCommand, Start: many, Stop: []string{"y"}},
		{Set: true, For: time.Second, Control: ProfileCommand, Start: []string{" "}, Stop: []string{"y"}},
	} {
		if err := p.Check(); err == nil {
			t.Errorf("%d args accepted", len(p.Start))
		}
	}
}
