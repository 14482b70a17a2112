package loadgen

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// TestToolCallDeltas: streamed tool-call deltas as OpenAI, vLLM, llama.cpp and Ollama send
// them assemble into whole calls; what a client could not run is a problem.
func TestToolCallDeltas(t *testing.T) {
	for _, tc := range []struct {
		name     string
		deltas   []string // each a delta.tool_calls array (or a whole message's with whole)
		whole    bool
		want     string // name(args);... of the result
		problem  string // prefix of problem(), "" for none
		maxCalls int
	}{
		{name: "openai stream", deltas: []string{
			`[{"index":0,"id":"call_1","type":"function","function":{"name":"lookup_0","arguments":""}}]`,
			`[{"index":0,"function":{"arguments":"{\"query\":"}}]`,
			`[{"index":0,"function":{"arguments":" \"x\"}"}}]`},
			want: `call_1 lookup_0({"query": "x"})`},
		{name: "parallel calls by index", deltas: []string{
			`[{"index":0,"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]`,
			`[{"index":1,"id":"b","type":"function","function":{"name":"g","arguments":"{"}}]`,
			`[{"index":1,"function":{"arguments":"}"}}]`},
			want: `a f({});b g({})`},
		{name: "ollama reuses index 0", deltas: []string{
			`[{"index":0,"id":"a","function":{"name":"f","arguments":"{}"}}]`,
			`[{"index":0,"id":"b","function":{"name":"g","arguments":"{}"}}]`},
			want: `a f({});b g({})`},
		{name: "no index, fragments follow", deltas: []string{
			`[{"id":"a","function":{"name":"f","arguments":"{\"q\""}}]`,
			`[{"function":{"arguments":":1}"}}]`},
			want: `a f({"q":1})`},
		{name: "whole message, arguments as object, no id", whole: true, deltas: []string{
			`[{"type":"function","function":{"name":"f","arguments":{"q":1}}},{"function":{"name":"g","arguments":"{}"}}]`},
			want: `call_0 f({"q":1});call_1 g({})`},
		{name: "cut by max_tokens", deltas: []string{
			`[{"index":0,"id":"a","function":{"name":"f","arguments":"{\"query\": \"unfinis"}}]`},
			want: `a f({"query": "unfinis)`, problem: "tool call arguments not JSON"},
		{name: "no function name", deltas: []string{`[{"index":0,"id":"a","function":{"arguments":"{}"}}]`},
			want: `a ({})`, problem: "tool call without a function name"},
		{name: "not an array", deltas: []string{`{"index":0}`}, problem: "tool calls malformed"},
		{name: "too many calls", deltas: []string{strings.Repeat(`[{"index":0,"id":"x","function":{"name":"f"}}]`, 1)}, maxCalls: MaxToolCalls + 1,
			problem: "tool calls over pel's bounds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &toolAcc{}
			deltas := tc.deltas
			if tc.maxCalls > 0 {
				deltas = nil
				for i := 0; i < tc.maxCalls; i++ {
					deltas = append(deltas, `[{"index":`+itoa(i)+`,"id":"x`+itoa(i)+`","function":{"name":"f"}}]`)
				}
			}
			for _, d := range deltas {
				if tc.whole {
					a.whole(json.RawMessage(d))
				} else {
					a.delta(json.RawMessage(d))
				}
			}
			if p := a.problem(); !strings.HasPrefix(p, tc.problem) || (tc.problem == "" && p != "") {
				t.Errorf("problem %q, want prefix %q", p, tc.problem)
			}
			if tc.want == "" {
				return
			}
			var got []string
			for _, c := range a.result() {
				got = append(got, c.ID+" "+c.Function.Name+"("+c.Function.Arguments+")")
			}
			if g := strings.Join(got, ";"); g != tc.want {
				t.Errorf("calls %s, want %s", g, tc.want)
			}
		})
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func f32base64(v ...float32) string {
	var buf bytes.Buffer
	for _, x := range v {
		binary.Write(&buf, binary.LittleEndian, math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

// TestParseEmbeddings: one vector per input, each index once, one dimension; floats or
// base64; an error object in a 200 answer is an error.
func TestParseEmbeddings(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       int
		dims       int
		usage      int
		err        string
	}{
		{name: "openai float", want: 2, dims: 3, usage: 7,
			body: `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,-2e-3,3]},{"object":"embedding","index":1,"embedding":[1,2,3]}],"model":"m","usage":{"prompt_tokens":7,"total_tokens":7}}`},
		{name: "base64, out of order", want: 2, dims: 2,
			body: `{"data":[{"index":1,"embedding":"` + f32base64(1, 2) + `"},{"index":0,"embedding":"` + f32base64(3, 4) + `"}]}`},
		{name: "unknown keys skipped", want: 1, dims: 1, body: `{"extra":{"a":[1,{"b":2}]},"data":[{"index":0,"embedding":[1],"x":[[]]}]}`},
		{name: "too few vectors", want: 2, body: `{"data":[{"index":0,"embedding":[1]}]}`, err: "1 vectors for 2 inputs"},
		{name: "index twice", want: 2, body: `{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[1]}]}`, err: "index 0 twice"},
		{name: "index out of range", want: 1, body: `{"data":[{"index":5,"embedding":[1]}]}`, err: "not one of the 1 inputs"},
		{name: "dims differ", want: 2, body: `{"data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":[1]}]}`, err: "1 dimensions, the first vector had 2"},
		{name: "not a number", want: 1, body: `{"data":[{"index":0,"embedding":[1,"x"]}]}`, err: "element 1 is not a number"},
		{name: "empty vector", want: 1, body: `{"data":[{"index":0,"embedding":[]}]}`, err: "no embedding"},
		{name: "error object", want: 1, body: `{"error":{"message":"Pooling type 'none' is not OAI compatible","type":"invalid_request_error"}}`, err: "error in response: Pooling"},
		{name: "bad base64", want: 1, body: `{"data":[{"index":0,"embedding":"AAA"}]}`, err: "not base64"},
		{name: "cut", want: 1, body: `{"data":[{"index":0,"embedding":[1,2`, err: "EOF"},
		{name: "negative usage", want: 1, body: `{"data":[{"index":0,"embedding":[1]}],"usage":{"prompt_tokens":-1}}`, err: "implausible usage"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := ParseEmbeddings(strings.NewReader(tc.body), tc.want)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.N != tc.want || res.Dims != tc.dims || (tc.usage > 0 && res.PromptTokens != tc.usage) {
				t.Errorf("got %+v", res)
			}
		})
	}
}

// FuzzToolCallDeltas: no sequence of deltas makes the accumulator panic or hold more than
// its bounds; every call it returns has an id, a type and JSON-ish arguments text.
func FuzzToolCallDeltas(f *testing.F) {
	f.Add(`[{"index":0,"id":"a","type":"function","function":{"name":"f","arguments":"{\"q\""}}]`, `[{"index":0,"function":{"arguments":":1}"}}]`, false)
	f.Add(`[{"index":0,"id":"a","function":{"name":"f"}}]`, `[{"index":0,"id":"b","function":{"name":"g"}}]`, false)
	f.Add(`[{"function":{"name":"f","arguments":{"q":1}}}]`, `null`, true)
	f.Add(`[{"index":-3,"id":"","function":null}]`, `[{"index":99999999999}]`, false)
	f.Fuzz(func(t *testing.T, d1, d2 string, whole bool) {
		a := &toolAcc{}
		for _, d := range []string{d1, d2, d1} {
			if whole {
				a.whole(json.RawMessage(d))
			} else {
				a.delta(json.RawMessage(d))
			}
		}
		_ = a.problem()
		calls := a.result()
		if len(calls) > MaxToolCalls || a.bytes > MaxKeptOutput {
			t.Fatalf("over bounds: %d calls, %d bytes", len(calls), a.bytes)
		}
		for _, c := range calls {
			if c.ID == "" || c.Type == "" || c.Function.Arguments == "" {
				t.Fatalf("incomplete call %+v", c)
			}
		}
	})
}

// FuzzParseEmbeddings: any body either parses into a consistent batch or is an error.
func FuzzParseEmbeddings(f *testing.F) {
	f.Add([]byte(`{"data":[{"index":0,"embedding":[0.1,0.2]},{"index":1,"embedding":[1,2]}],"usage":{"prompt_tokens":3}}`), 2)
	f.Add([]byte(`{"data":[{"index":0,"embedding":"AACAPwAAAEA="}]}`), 1)
	f.Add([]byte(`{"error":{"message":"no"}}`), 1)
	f.Add([]byte(`{"data":[{"embedding":[1e999]}]}`), 1)
	f.Fuzz(func(t *testing.T, body []byte, want int) {
		if want < 1 || want > 64 {
			want = 1
		}
		res, err := ParseEmbeddings(bytes.NewReader(body), want)
		if err == nil && (res.N != want || res.Dims < 1 || res.Dims > maxEmbeddingDims) {
			t.Fatalf("accepted an inconsistent batch: %+v for %d inputs", res, want)
		}
	})
}
