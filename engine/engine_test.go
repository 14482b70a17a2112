package engine

import "testing"

// TestLookup: every profile is found by its name and each alias, in any case and with
// spaces around; an unknown engine gets the generic profile.
func TestLookup(t *testing.T) {
	for _, p := range Profiles {
		for _, n := range append([]string{p.Name}, p.Aliases...) {
			for _, v := range []string{n, " " + n + " ", upper(n)} {
				if got := Lookup(v); got != p {
					t.Errorf("Lookup(%q) = %s, want %s", v, got.Name, p.Name)
				}
			}
		}
	}
	if Lookup("mystery-engine") != Generic || Known("mystery-engine") || !Known("sim") {
		t.Error("unknown engines must read as Generic; sim as vLLM")
	}
}

// TestProfilesComplete: every engine names a knob for each change a prediction can ask
// for, a metric family for its queue or its latency, and no two engines claim one name.
func TestProfilesComplete(t *testing.T) {
	seen := map[string]string{}
	for _, p := range append(append([]*Profile{}, Profiles...), Generic) {
		k := p.Knobs
		for what, v := range map[string]string{"seqs": k.Seqs, "context": k.Context, "chunk": k.Chunk, "chunk cap": k.ChunkCap,
			"spec": k.Spec, "kv memory": k.KVMem, "queue": k.Queue, "kv": k.KV, "prefill": k.Prefill} {
			if v == "" {
				t.Errorf("%s: no %s knob", p.Title, what)
			}
		}
		if p == Generic {
			continue
		}
		if len(p.Metrics) == 0 || len(p.Prefixes) == 0 {
			t.Errorf("%s: no metrics or prefixes", p.Name)
		}
		for _, n := range append([]string{p.Name}, p.Aliases...) {
			if o, dup := seen[n]; dup {
				t.Errorf("%q names both %s and %s", n, o, p.Name)
			}
			seen[n] = p.Name
		}
		switch p.Processes {
		case "", "one", "two":
		default:
			t.Errorf("%s: form %q", p.Name, p.Processes)
		}
	}
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 32
		}
	}
	return string(b)
}
