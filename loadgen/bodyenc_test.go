package loadgen

import (
	"bytes"
	"encoding"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/workload"
)

// sameAsMarshal fails t unless appendBody writes b as json.Marshal does.
func sameAsMarshal(t testing.TB, b requestBody) {
	t.Helper()
	want, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := appendBody([]byte("prefix:"), &b)
	if !ok {
		t.Fatalf("appendBody refused %+v", b)
	}
	if !bytes.Equal(got, append([]byte("prefix:"), want...)) {
		t.Fatalf("appendBody wrote\n%s\njson.Marshal writes\n%s", got, want)
	}
}

func TestAppendBodyMatchesMarshal(t *testing.T) {
	p, empty := "a prompt <b> & \"q\"\n\t\u2028 \xff end", ""
	cases := []struct {
		name string
		b    requestBody
	}{
		{name: "zero", b: requestBody{}},
		{name: "streamed chat", b: requestBody{Model: "m", Messages: []workload.Message{{Role: "user", Content: "hello"}}, MaxTokens: 8, Stream: true, StreamOptions: &streamOptions{IncludeUsage: true}}},
		{name: "not streamed", b: requestBody{Model: "m", Messages: []workload.Message{{Role: "user", Content: "x"}}, MaxTokens: 1}},
		{name: "escapes everywhere", b: requestBody{Model: "<m>&\x01", Messages: []workload.Message{{Role: "sys\"tem", Content: p}, {Role: "", Content: ""}}, MaxTokens: -3, IgnoreEOS: true}},
		{name: "tool answer", b: requestBody{Messages: []workload.Message{{Role: "tool", Content: "{}", ToolCallID: "call_1"}}, Stream: true}},
		{name: "completions prompt", b: requestBody{Model: "m", Prompt: &p, MaxTokens: 4, Stream: true, StreamOptions: &streamOptions{}}},
		{name: "empty prompt", b: requestBody{Prompt: &empty}},
		{name: "empty message list", b: requestBody{Messages: []workload.Message{}}},
		{name: "tool calls empty", b: requestBody{Messages: []workload.Message{{Role: "assistant", ToolCalls: []workload.ToolCall{}}}}},
		{name: "long prompt", b: requestBody{Messages: []workload.Message{{Role: "user", Content: strings.Repeat("word <", 1<<16)}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { sameAsMarshal(t, c.b) })
	}
}

// Bodies with tools, or a message carrying tool calls, are left to marshalBody.
func TestAppendBodyRefusesTools(t *testing.T) {
	for _, b := range []requestBody{
		{Tools: []workload.Tool{{Type: "function"}}},
		{ToolChoice: "auto"},
		{Messages: []workload.Message{{Role: "assistant", ToolCalls: []workload.ToolCall{{ID: "c"}}}}},
	} {
		if out, ok := appendBody(nil, &b); ok {
			t.Errorf("appendBody wrote %s for %+v", out, b)
		}
	}
}

// Random bodies, from an alphabet of the characters encoding/json escapes.
func TestAppendBodyRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", " ", "\"", "\\", "<", ">", "&", "\n", "\x00", "\x1f", "é", "\u2028", "\u2029", "\xff", "\xe2\x80", "😀"}
	str := func() string {
		var sb strings.Builder
		for range rng.IntN(12) {
			sb.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		return sb.String()
	}
	for range 3000 {
		b := requestBody{Model: str(), MaxTokens: rng.IntN(5) - 1, Stream: rng.IntN(2) == 0, IgnoreEOS: rng.IntN(2) == 0}
		if rng.IntN(2) == 0 {
			b.StreamOptions = &streamOptions{IncludeUsage: rng.IntN(2) == 0}
		}
		if rng.IntN(3) == 0 {
			p := str()
			b.Prompt = &p
		}
		for range rng.IntN(4) {
			m := workload.Message{Role: str(), Content: str()}
			if rng.IntN(3) == 0 {
				m.ToolCallID = str()
			}
			b.Messages = append(b.Messages, m)
		}
		sameAsMarshal(t, b)
	}
}

func FuzzAppendBody(f *testing.F) {
	f.Add("m", "user", "hello", "", "", 8, true)
	f.Add("<m>", "\u2028", "\xff\"", "id", "p", -1, false)
	f.Fuzz(func(t *testing.T, model, role, content, callID, prompt string, maxTokens int, stream bool) {
		b := requestBody{Model: model, MaxTokens: maxTokens, Stream: stream, IgnoreEOS: !stream,
			Messages: []workload.Message{{Role: role, Content: content, ToolCallID: callID}}}
		if stream {
			b.StreamOptions = &streamOptions{IncludeUsage: true}
			b.Prompt = &prompt
		}
		sameAsMarshal(t, b)
	})
}

// A field added to a request body, a message or the stream options fails here until
// appendBody writes it (or refuses bodies that carry it).
func TestBodyKeysMatchTags(t *testing.T) {
	want := map[reflect.Type][]string{
		reflect.TypeFor[requestBody](): {"model,omitempty", "messages,omitempty", "prompt,omitempty", "max_tokens,omitempty", "stream",
			"stream_options,omitempty", "ignore_eos,omitempty", "tools,omitempty", "tool_choice,omitempty"},
		reflect.TypeFor[workload.Message](): {"role", "content", "tool_calls,omitempty", "tool_call_id,omitempty"},
		reflect.TypeFor[streamOptions]():    {"include_usage"},
	}
	for typ, keys := range want {
		for _, m := range []reflect.Type{reflect.TypeFor[json.Marshaler](), reflect.TypeFor[encoding.TextMarshaler]()} {
			if typ.Implements(m) || reflect.PointerTo(typ).Implements(m) {
				t.Errorf("%s implements %v: appendBody does not call it", typ.Name(), m)
			}
		}
		var tags []string
		for i := range typ.NumField() {
			if f := typ.Field(i); f.IsExported() {
				tags = append(tags, f.Tag.Get("json"))
			}
		}
		if !reflect.DeepEqual(tags, keys) {
			t.Errorf("%s has the JSON keys\n%q\nappendBody writes\n%q", typ.Name(), tags, keys)
		}
	}
}

func BenchmarkBody(b *testing.B) {
	c := NewClient(ClientConfig{BaseURL: "http://127.0.0.1:1", Model: "test-model"})
	req := &workload.Request{MaxTokens: 8, Messages: []workload.Message{{Role: "user", Content: "one two three four five six seven eight"}}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Body(req); err != nil {
			b.Fatal(err)
		}
	}
}
