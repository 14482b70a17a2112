package redact

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

func TestText(t *testing.T) {
	tests := []struct {
		name, in string
		gone     []string // originals that must not survive
		kept     []string // text that must stay as it is
		shape    *regexp.Regexp
	}{
		{"url with host and port", "dial http://gpu-7.corp.example:8000/v1/chat/completions: refused",
			[]string{"gpu-7.corp.example", ":8000"}, []string{"/v1/chat/completions", "dial ", ": refused"},
			regexp.MustCompile(`^dial http://host-[0-9a-f]{10}\.invalid:[0-9]{5}/v1/chat/completions: refused$`)},
		{"url credentials", "https://alice:s3cret@10.1.2.3:9400/metrics",
			[]string{"alice", "s3cret", "10.1.2.3", ":9400"}, []string{"/metrics"}, nil},
		{"ipv4 and port", "connect 192.168.7.21:4318 failed", []string{"192.168.7.21", "4318"}, []string{"connect ", " failed"}, nil},
		{"ipv6 bracketed", "listen [fe80::1%eth0]:8443 and [2001:db8::7]:80", []string{"fe80::1", "2001:db8::7", "8443"}, nil, nil},
		{"ipv6 bare", "peer 2001:db8:0:1::42 closed", []string{"2001:db8:0:1::42"}, []string{"peer ", " closed"}, nil},
		{"host:port", "dcgm at node-17.cluster.local:9400", []string{"node-17.cluster.local", "9400"}, []string{"dcgm at "}, nil},
		{"unix path with user", "open /home/alice/runs/worker.trace.json.gz: denied", []string{"/home/alice", "alice"}, []string{".trace.json.gz: denied"},
			regexp.MustCompile(`^open path-[0-9a-f]{10}\.trace\.json\.gz: denied$`)},
		{"python frame", "/home/bob/proj/train.py(123): forward", []string{"bob", "/proj/"}, []string{".py(123): forward"}, nil},
		{"windows path", `C:\Users\carol\trace.json`, []string{"carol"}, nil, nil},
		{"timestamps are not addresses", "at 2026-12-02T02:19:43.548Z ttft p99:120 ms", nil, []string{"2026-12-02T02:19:43.548Z", "p99:120"}, nil},
		{"mime and kernel names stay", "application/json void at::native::vectorized_elementwise_kernel<4, c10::Half> cub::DeviceReduce",
			nil, []string{"application/json", "at::native::", "c10::Half", "cub::DeviceReduce"}, nil},
		{"model names stay", "llama-3.1-8b on NVIDIA H100 80GB HBM3", nil, []string{"llama-3.1-8b on NVIDIA H100 80GB HBM3"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := New()
			got := r.Text(tc.in)
			for _, g := range tc.gone {
				if strings.Contains(got, g) {
					t.Errorf("Text(%q) = %q: still holds %q", tc.in, got, g)
				}
			}
			for _, k := range tc.kept {
				if !strings.Contains(got, k) {
					t.Errorf("Text(%q) = %q: lost %q", tc.in, got, k)
				}
			}
			if tc.shape != nil && !tc.shape.MatchString(got) {
				t.Errorf("Text(%q) = %q, not of the form %s", tc.in, got, tc.shape)
			}
			if again := r.Text(got); again != got {
				t.Errorf("Text is not idempotent: %q then %q", got, again)
			}
			if leaks := r.Check(got); len(leaks) > 0 {
				t.Errorf("Check(%q) = %+v", got, leaks)
			}
		})
	}
}

// Equal originals get equal pseudonyms wherever they stand (the joins of a package), two
// Redactors give different ones (the key is per package), and ids keep their shape.
func TestPseudonymsStableAndKeyed(t *testing.T) {
	a, b := New(), New()
	id := "c42202dc8f927824af39a5f43092f2ce"
	first, again := a.ID(id), a.ID(id)
	if first != again || first == b.ID(id) || first == id {
		t.Errorf("id pseudonyms: %s %s %s", first, again, b.ID(id))
	}
	if p := a.ID(id); !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(p) {
		t.Errorf("a 32-hex trace id became %q", p)
	}
	if p := a.ID("57e7fdda29469d66"); len(p) != 16 || !isHex(p) {
		t.Errorf("a span id became %q", p)
	}
	h := a.Host("gpu-7.corp.example")
	if got := a.Text("http://GPU-7.corp.example:80/x"); !strings.Contains(got, h) {
		t.Errorf("a host in a URL (%q) has another pseudonym than the label's %q", got, h)
	}
	if got := a.Text("lookup gpu-7.corp.example: no such host"); got != "lookup "+h+": no such host" {
		t.Errorf("a known host in free text: %q", got)
	}
	if a.Host("127.0.0.1") != a.Host("::ffff:127.0.0.1") {
		t.Errorf("one IPv4 address, two forms, two pseudonyms")
	}
	if p := a.Port("8000"); p == "8000" || p != a.Port("8000") {
		t.Errorf("port pseudonym %q", p)
	}
	ph := strings.Repeat("ab", 32)
	if p := a.PromptHash(ph); p == ph || len(p) != 64 {
		t.Errorf("prompt hash pseudonym %q", p)
	}
	k := New()
	k.KeepPromptHashes = true
	if k.PromptHash(ph) != ph {
		t.Errorf("KeepPromptHashes replaced the hash")
	}
	if got := a.Text("seen " + id + " and " + strings.Repeat("0", 32)); strings.Contains(got, id) || !strings.Contains(got, strings.Repeat("0", 32)) {
		t.Errorf("hex tokens: a known id is replaced, an unknown one kept: %q", got)
	}
}

func TestJSONRules(t *testing.T) {
	r := New()
	line := `{"id":"c42202dc8f927824af39a5f43092f2ce","trace_id":"c42202dc8f927824af39a5f43092f2ce","prompt":"secret prompt","prompt_sha256":"` +
		strings.Repeat("ab", 32) + `","target":"http://localhost:8000","n":1796177983555547099,"l":{"Hostname":"vm-a","UUID":"GPU-5e1a0000-0000-4000-8000-0000009e1000","gpu":"0"}}`
	got, err := r.Line([]byte(line), &Rules{IDs: []string{"id", "trace_id"}, Drop: []string{"prompt"}})
	if err != nil {
		t.Fatal(err)
	}
	s := string(got)
	for _, g := range []string{"c42202dc", "secret prompt", "abab", "localhost", ":8000", "vm-a", "5e1a0000"} {
		if strings.Contains(s, g) {
			t.Errorf("%s still holds %q", s, g)
		}
	}
	for _, k := range []string{`"n":1796177983555547099`, `"gpu":"0"`, `"Hostname":"host-`, `"UUID":"GPU-`} {
		if !strings.Contains(s, k) {
			t.Errorf("%s lost %q", s, k)
		}
	}
	var kinds []string
	for _, c := range r.Counts() {
		kinds = append(kinds, string(c.Kind)+"/"+c.Action)
	}
	if got := strings.Join(kinds, ","); !strings.Contains(got, "prompt/output text/removed") || !strings.Contains(got, "request/trace/span id/replaced") {
		t.Errorf("counts %s", got)
	}
	// The id and the trace id were one value: one pseudonym.
	if strings.Count(s, r.ID("c42202dc8f927824af39a5f43092f2ce")) != 2 {
		t.Errorf("id and trace_id got different pseudonyms: %s", s)
	}
}

func FuzzText(f *testing.F) {
	for _, s := range []string{"http://a.b:80/x", "[::1]:8080", "10.0.0.1:9", "/home/u/x.py(1): f", "host-abc.invalid:20000", "a::1", `C:\x\y`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r := New()
		got := r.Text(s)
		if again := r.Text(got); again != got {
			t.Errorf("not idempotent: %q -> %q -> %q", s, got, again)
		}
	})
}

// Line rewrites any JSON document into valid JSON, and refuses what is not JSON.
func FuzzLine(f *testing.F) {
	for _, s := range []string{`{"id":"c42202dc8f927824af39a5f43092f2ce","target":"http://h.example:1/x","chunk_us":[1,2]}`,
		`{"l":{"Hostname":"a","UUID":"GPU-1"},"fam":[{"n":"x","m":[{"l":{"instance":"10.0.0.1:9400"}}]}]}`, `[1,"a"]`, `"s"`, `{"a":`} {
		f.Add([]byte(s))
	}
	rules := &Rules{IDs: []string{"id"}, Drop: []string{"prompt"}}
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := New().Line(b, rules)
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Errorf("Line(%q) = %q, not JSON", b, out)
		}
	})
}

func TestPathKeepsOnlyFormatExtensions(t *testing.T) {
	r := New()
	for in, ext := range map[string]string{
		"/home/a/gpu7.corp.example.json":                  ".json",
		"gpu-node-17.corp.example-rank1.pt.trace.json.gz": ".pt.trace.json.gz",
		"/data/x.sqlite":                                  ".sqlite",
		"model_runner.py":                                 ".py",
		"/tmp/noext":                                      "",
	} {
		p := r.Path(in)
		if !strings.HasPrefix(p, "path-") || strings.TrimLeft(strings.TrimPrefix(p, "path-"), "0123456789abcdef") != ext {
			t.Errorf("Path(%q) = %q, want path-<hex>%s", in, p, ext)
		}
	}
}
