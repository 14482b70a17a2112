package loadgen

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// chunkCases are event payloads of the shapes servers send, and the shapes where the
// scanner must hand over to encoding/json.
var chunkCases = []string{
	`{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
	`{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"tok "},"finish_reason":"length"}]}`,
	`{"id":"x","choices":[],"usage":{"prompt_tokens":8,"completion_tokens":8,"total_tokens":16}}`,
	`{"choices":[{"index":0,"text":" b","finish_reason":null,"logprobs":null}],"usage":null}`,
	`{"choices":[{"delta":{"content":"a","reasoning_content":"r","reasoning":"s"}}],"usage":{"prompt_tokens":3,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":2}}}`,
	`{"choices":[{"delta":{"content":"line\nnext \"q\" \u00e9 \ud83d\ude00"}}]}`,
	`{"choices":[{"delta":{"content":"caf` + "\xc3\xa9" + `"}}]}`,
	`{"choices":[{"delta":{"content":"bad` + "\xff" + `utf8"}}]}`,
	`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{\"a\":"}}]}}]}`,
	`{"choices":[{"delta":{"tool_calls":null}}]}`,
	`{"choices":[{"message":{"content":"whole","tool_calls":[]},"finish_reason":"stop"}]}`,
	`{"choices":[null,{"delta":null},{"delta":{"content":null}}]}`,
	`{"choices":null,"usage":{}}`,
	`{"error":{"message":"boom","code":500}}`,
	`{"error":null}`,
	`{"truncated":true,"choices":[]}`,
	`{"truncated":false}`,
	`{"truncated":null}`,
	`{"timings":{"prompt_n":3,"predicted_n":4}}`,
	`{"timings":null}`,
	` { "choices" : [ { "delta" : { "content" : "x" } } ] , "usage" : { "completion_tokens" : 7 } } `,
	`{"Choices":[{"delta":{"content":"x"}}]}`,
	`{"choices":[{"Delta":{"content":"x"}}]}`,
	`{"choices":[{"delta":{"CONTENT":"x"}}]}`,
	`{"chol\u0069ces":[]}`,
	`{"choices":[{"delta":{"content":"a"}}],"choices":[{"delta":{"content":"b"}}]}`,
	`{"usage":{"completion_tokens":1},"usage":{"prompt_tokens":2}}`,
	`{"choices":[{"delta":{"content":"a","content":"b"}}]}`,
	`{"usage":{"completion_tokens":1.5}}`,
	`{"usage":{"completion_tokens":1e2}}`,
	`{"usage":{"completion_tokens":"7"}}`,
	`{"usage":{"completion_tokens":99999999999999999999999}}`,
	`{"usage":{"completion_tokens":-3}}`,
	`{"choices":{"delta":{}}}`,
	`{"choices":[{"delta":"x"}]}`,
	`{"choices":[{"finish_reason":7}]}`,
	`{"choices":[{"finish_reason":"st\u006fp"}]}`,
	`{"truncated":"yes"}`,
	`{"usage":[]}`,
	`{"usage":{"prompt_tokens_details":null}}`,
	`{"usage":{"prompt_tokens_details":{"cached_tokens":null,"x":[1,{"y":"}"}]}}}`,
	`{"\u017fomething":1,"K":2}`,
	`{"x":{"nested":["]","}",{"a":[[]]}]},"choices":[{"delta":{"content":"ok"}}]}`,
	`null`,
	`7`,
	`"str"`,
	`[]`,
	`{}`,
	`{"choices":[`,
	`{"choices":[{"delta":{"content":"a"}}]}x`,
	`{"choices":[{"delta":{"content":"tab` + "\t" + `"}}]}`,
	``,
}

func decodeBoth(t *testing.T, data []byte) {
	t.Helper()
	if quickValid(data) && !json.Valid(data) {
		t.Fatalf("%q: quickValid says valid, encoding/json says not", data)
	}
	var want, got chunk
	werr := json.Unmarshal(data, &want)
	gerr := decodeChunk(data, &got, nil)
	// With a scratch array that held other choices, the result is the same.
	scratch := []choice{{Text: "left over"}, {Text: "from before"}}
	var again chunk
	if err := decodeChunk(data, &again, &scratch); (err == nil) != (gerr == nil) || (err == nil && !reflect.DeepEqual(got, again)) {
		t.Fatalf("%q: with a used scratch array %+v, without %+v", data, again, got)
	}
	if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
		t.Fatalf("%q: error %v, encoding/json says %v", data, gerr, werr)
	}
	if werr == nil && !reflect.DeepEqual(want, got) {
		t.Fatalf("%q:\n got %+v\nwant %+v", data, got, want)
	}
}

// quickValid against json.Valid on the shapes its branches tell apart.
func TestQuickValid(t *testing.T) {
	deep := strings.Repeat("[", 40) + strings.Repeat("]", 40)
	for _, c := range append(chunkCases, `[1,-0,0.5,1e9,-1.5E+3,true,false,null,"\u00e9\n",{}]`, `{"a":{"b":[[]]}}`,
		`01`, `-`, `1.`, `1e`, `.5`, `+1`, `[1,]`, `{"a":1,}`, `{"a"}`, `{1:2}`, `[}`, `{]`, `"\x"`, `"\u12"`, `"\u12G4"`,
		`tru`, `nul`, `falsey`, `"a`+"\x01"+`"`, `[1 2]`, `{"a":1 "b":2}`, `  7  `, deep) {
		if q, v := quickValid([]byte(c)), json.Valid([]byte(c)); q && !v || !q && v && c != deep {
			t.Errorf("%q: quickValid %v, json.Valid %v", c, q, v)
		}
	}
}

func TestDecodeChunkIsUnmarshal(t *testing.T) {
	for _, c := range chunkCases {
		decodeBoth(t, []byte(c))
	}
}

// The scanner reads the common shapes itself (the point of it): a case that always fell
// back to encoding/json would pass the test above and save nothing.
func TestDecodeChunkFastPath(t *testing.T) {
	for _, c := range chunkCases[:5] {
		var ch chunk
		if s := (chunkScan{b: []byte(c)}); !s.chunk(&ch) {
			t.Errorf("%s: handed to encoding/json", c)
		}
	}
}

func FuzzDecodeChunk(f *testing.F) {
	for _, c := range chunkCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) { decodeBoth(t, data) })
}

func BenchmarkDecodeChunk(b *testing.B) {
	data := []byte(chunkCases[1])
	b.Run("scanner", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var ch chunk
			decodeChunk(data, &ch, nil)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var ch chunk
			json.Unmarshal(data, &ch)
		}
	})
}
