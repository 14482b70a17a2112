package workload

import (
	"strings"
	"testing"
	"time"
)

func TestReadDataset(t *testing.T) {
	good := []struct {
		name, format, data string
		n                  int
		first              string
	}{
		{"prompts", "prompts", "{\"prompt\": \"a\"}\n\n{\"prompt\": \"b\", \"output_tokens\": 5, \"source\": \"x\"}\n", 2, "a"},
		{"prompts no final newline", "prompts", `{"prompt": "a"}`, 1, "a"},
		{"prompts array", "prompts", `[{"prompt": "a"}, {"prompt": "b"}]`, 2, "a"},
		{"sharegpt jsonl", "sharegpt", `{"conversations": [{"from": "human", "value": "q"}, {"from": "gpt", "value": "a"}]}` + "\n" +
			`{"conversations": []}` + "\n" + `{"conversations": [{"from": "gpt", "value": "only an answer"}]}` + "\n", 1, "q"},
		{"sharegpt array", "sharegpt", "[\n {\"id\": 1, \"conversations\": [{\"from\": \"human\", \"value\": \"q1\"}]},\n {\"conversations\": [{\"from\": \"user\", \"value\": \"q2\"}]}\n]\n", 2, "q1"},
	}
	for _, tc := range good {
		t.Run(tc.name, func(t *testing.T) {
			items, err := ReadDataset(strings.NewReader(tc.data), "d.jsonl", tc.format)
			if err != nil {
				t.Fatal(err)
			}
			if len(items) != tc.n || items[0].Prompt != tc.first {
				t.Fatalf("items %+v", items)
			}
		})
	}
	items, _ := ReadDataset(strings.NewReader("[\n {\"conversations\": [{\"from\": \"human\", \"value\": \"q1\"}]},\n\n {\"conversations\": [{\"from\": \"human\", \"value\": \"q2\"}]}\n]"), "d", "sharegpt")
	if len(items) != 2 || items[0].Line != 2 || items[1].Line != 4 {
		t.Errorf("array element lines: %+v", items)
	}
	bad := []struct {
		name, format, data, want string
	}{
		{"broken line", "prompts", "{\"prompt\": \"a\"}\n{\"prompt\": \n", "d.jsonl:2: bad JSON"},
		{"no prompt", "prompts", "\n\n{\"text\": \"a\"}\n", `d.jsonl:3: want {"prompt": "..."}: no "prompt"`},
		{"empty prompt", "prompts", `{"prompt": ""}`, "d.jsonl:1: empty prompt"},
		{"prompt not string", "prompts", `{"prompt": 5}`, "d.jsonl:1: bad JSON"},
		{"bad output tokens", "prompts", `{"prompt": "a", "output_tokens": 0}`, "d.jsonl:1: output_tokens out of range: 0"},
		{"empty", "prompts", "\n \n", "d.jsonl: no prompts"},
		{"no conversations", "sharegpt", `{"prompt": "a"}`, `d.jsonl:1: want {"conversations": [...]}`},
		{"bad turn", "sharegpt", `{"conversations": [{"from": "human"}]}`, `d.jsonl:1: conversations[0]: want {"from": ..., "value": ...}`},
		{"bad speaker", "sharegpt", `{"conversations": [{"from": "robot", "value": "x"}]}`, `d.jsonl:1: conversations[0]: unknown speaker "robot"`},
		{"no human", "sharegpt", `{"conversations": [{"from": "gpt", "value": "x"}]}`, "d.jsonl: no usable prompt (1 conversations without a human turn)"},
		{"broken array", "sharegpt", "[\n{\"conversations\": []},\n{\"conversations\": [}\n]", "d.jsonl:3: bad JSON"},
		{"garbage after array", "prompts", `[{"prompt": "a"}] x`, "d.jsonl:1: data after the closing ]"},
		{"unknown format", "csv", `{"prompt": "a"}`, `unknown dataset format "csv"`},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadDataset(strings.NewReader(tc.data), "d.jsonl", tc.format)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestReadReplay(t *testing.T) {
	ev, err := ReadReplay(strings.NewReader(`{"timestamp": "2024-05-01T12:00:01.5Z", "task": "a"}
{"timestamp": "2024-05-01T12:00:00Z", "prompt_tokens": 3, "output_tokens": 4}
`), "t.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(ev) != 2 || ev[0].At != 0 || ev[0].Line != 2 || ev[0].PromptTokens != 3 || ev[1].At != 1500*time.Millisecond || ev[1].Task != "a" {
		t.Fatalf("events %+v", ev)
	}
	ev, err = ReadReplay(strings.NewReader("{\"timestamp\": 1714564800.25}\n{\"timestamp\": 1714564801}\n"), "t.jsonl")
	if err != nil || ev[1].At != 750*time.Millisecond {
		t.Fatalf("unix timestamps: %+v %v", ev, err)
	}
	bad := []struct{ name, data, want string }{
		{"unknown key", `{"t": 1, "prompt": "x"}`, `t.jsonl:1: bad trace line: json: unknown field "prompt"`},
		{"no time", `{"prompt_tokens": 3}`, `t.jsonl:1: want "t" (seconds) or "timestamp"`},
		{"both", `{"t": 1, "timestamp": 5}`, "t.jsonl:1: give t or timestamp, not both"},
		{"mixed", "{\"t\": 1}\n{\"timestamp\": 5}", "t.jsonl:2: timestamp here but t on earlier lines"},
		{"negative t", `{"t": -1}`, "t.jsonl:1: t out of range"},
		{"bad timestamp", `{"timestamp": "yesterday"}`, `t.jsonl:1: bad timestamp "yesterday"`},
		{"zero tokens", `{"t": 1, "output_tokens": 0}`, "t.jsonl:1: output_tokens out of range: 0"},
		{"trailing", `{"t": 1} {"t": 2}`, "t.jsonl:1: bad trace line: data after the JSON value"},
		{"empty", "", "t.jsonl: empty trace"},
		{"broken", "{\"t\": 1}\n{\"t\": ", "t.jsonl:2: bad trace line"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadReplay(strings.NewReader(tc.data), "t.jsonl")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func FuzzReadDataset(f *testing.F) {
	f.Add([]byte(`{"prompt": "a", "output_tokens": 3}`), false)
	f.Add([]byte(`[{"conversations": [{"from": "human", "value": "q"}]}]`), true)
	f.Add([]byte("{\"conversations\": [{\"from\": \"gpt\", \"value\": \"a\"}, {\"from\": \"human\", \"value\": \"q\"}]}\n"), true)
	f.Fuzz(func(t *testing.T, data []byte, sharegpt bool) {
		format := "prompts"
		if sharegpt {
			format = "sharegpt"
		}
		items, err := ReadDataset(strings.NewReader(string(data)), "fuzz.jsonl", format)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.jsonl") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for _, it := range items {
			if it.Prompt == "" || it.Line < 1 {
				t.Fatalf("bad item %+v", it)
			}
			if sharegpt && (len(it.Messages) == 0 || it.Messages[len(it.Messages)-1].Role != "user") {
				t.Fatalf("conversation must end with the user's turn: %+v", it.Messages)
			}
		}
	})
}

func FuzzReadReplay(f *testing.F) {
	f.Add([]byte("{\"t\": 0.5, \"prompt_tokens\": 3, \"task\": \"a\"}\n{\"t\": 0.1}\n"))
	f.Add([]byte(`{"timestamp": "2024-05-01T12:00:00Z"}`))
	f.Add([]byte(`[{"timestamp": 1714564800.25}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := ReadReplay(strings.NewReader(string(data)), "fuzz.jsonl")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.jsonl") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for i, e := range ev {
			if e.At < 0 || (i > 0 && e.At < ev[i-1].At) {
				t.Fatalf("events out of order or negative: %+v", ev)
			}
		}
	})
}
