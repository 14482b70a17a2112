package record

import (
	"encoding/json"
	"reflect"
	"testing"
)

// sameAsStdlib decodes line both ways and fails when the fast path accepted a line that
// json.Unmarshal reads differently (or refuses).
func sameAsStdlib(t *testing.T, line []byte) {
	t.Helper()
	var want Record
	werr := json.Unmarshal(line, &want)
	var got Record
	fast := fastDecode(line, &got)
	if fast && werr != nil {
		t.Fatalf("fast path accepted %q, which json.Unmarshal refuses: %v", line, werr)
	}
	if fast && !reflect.DeepEqual(got, want) {
		t.Fatalf("fast path read %q as\n%+v\njson.Unmarshal as\n%+v", line, got, want)
	}
	var viaLine Record
	if err := decodeLine(line, &viaLine); (err == nil) != (werr == nil) || (err == nil && !reflect.DeepEqual(viaLine, want)) {
		t.Fatalf("decodeLine(%q) = %+v, %v; json.Unmarshal %+v, %v", line, viaLine, err, want, werr)
	}
}

func fullRecord() Record {
	r := Record{Seq: 7, ID: "abc", TraceID: "0af7651916cd43dd8448eb211c80319c", Task: "chat", Phase: PhaseWarm, InFlight: 3,
		ScheduledAt: t0, SentAt: t0.Add(ms(1)), HeadersAt: t0.Add(ms(2)), FirstTokenAt: t0.Add(ms(30)),
		LastTokenAt: t0.Add(ms(90)), DoneAt: t0.Add(ms(91)), FirstSentAt: t0.Add(ms(1)), ClientQueueUS: 5,
		ChunkUS: []int64{30000, 60000, 90000}, ChunkTokens: []int{1, 2, 1}, Chunks: 4,
		PromptTokens: 100, OutputTokens: 4, TokenSource: TokensUsage, CachedPromptTokens: 16, Attempts: 2,
		Status: StatusHTTPError, HTTPStatus: 503, Error: "HTTP 503: busy ünïcode", FinishReason: "stop",
		ErrorClass: ErrOverloaded, SentPromptTokens: 100, Server: &ServerTimings{PrefillUS: 12000, PromptN: 90},
		Flags: []string{FlagConnRetried}, Accepted: false, Reasons: []string{"error: http 503"},
		Step: &StepRef{Task: 7, Index: 1, Kind: StepChat, Turn: 1, ThinkUS: 10}, Steps: 0,
		PromptHash: "ff", PromptChars: 400, OutputChars: 12, Prompt: "hi", Output: "ho"}
	return r
}

func TestFastDecodeMatchesEncodingJSON(t *testing.T) {
	full, err := json.Marshal(fullRecord())
	if err != nil {
		t.Fatal(err)
	}
	var r Record
	if !fastDecode(full, &r) {
		t.Fatalf("a line pel writes must take the fast path: %s", full)
	}
	lines := []string{
		string(full),
		`{}`,
		` { "seq" : 1 , "chunk_us" : [ ] , "flags" : [ ] , "reasons": null, "server": null } `,
		`{"seq":1,"seq":2}`,                // repeated key: last wins in encoding/json
		`{"Seq":3}`,                        // case-folded key
		`{"seq":1.5}`,                      // float into int: an error
		`{"seq":1e3}`,                      // exponent: an error
		`{"seq":01}`,                       // leading zero: invalid JSON
		`{"seq":99999999999999999999}`,     // overflow
		`{"task":"a\"b","error":"\u00e9"}`, // escapes
		`{"task":"\xff"}`,                  // invalid UTF-8: replaced by encoding/json
		`{"scheduled_at":"2026-01-02T03:04:05.123456789Z"}`,
		`{"scheduled_at":"2026-01-02T03:04:05+02:00"}`,
		`{"scheduled_at":"yesterday"}`,
		`{"scheduled_at":null,"accepted":null}`,
		`{"accepted":true,"unknown_key":{"a":[1,2,{"b":null}]}}`,
		`{"step":{"task":1,"index":2,"kind":"chat","turn":0}}`,
		`{"step":{"task":"x"}}`,
		`{"chunk_us":[1,-2,3],"chunk_tokens":[1]}`,
		`{"chunk_us":[1,]}`,
		`{"seq":1}x`,
		`{"seq":1`,
		`[1]`,
	}
	for _, l := range lines {
		sameAsStdlib(t, []byte(l))
	}
}

// FuzzDecode: whatever the bytes, the fast path never disagrees with encoding/json.
func FuzzDecode(f *testing.F) {
	full, _ := json.Marshal(fullRecord())
	f.Add(full)
	f.Add([]byte(`{"seq":1,"chunk_us":[1,2],"scheduled_at":"2026-01-02T03:04:05Z","flags":["a"]}`))
	f.Add([]byte(`{"seq":-0,"task":"x","server":{"prefill_us":1}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		if len(line) > 1<<16 {
			return
		}
		sameAsStdlib(t, line)
	})
}

func BenchmarkDecodeLine(b *testing.B) {
	r := fullRecord()
	r.Server, r.Step = nil, nil
	for i := 0; i < 16; i++ {
		r.ChunkUS = append(r.ChunkUS, int64(100000+i*10000))
		r.ChunkTokens = append(r.ChunkTokens, 1)
	}
	line, _ := json.Marshal(r)
	b.Run("fast", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			var x Record
			if err := decodeLine(line, &x); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			var x Record
			if err := json.Unmarshal(line, &x); err != nil {
				b.Fatal(err)
			}
		}
	})
}
