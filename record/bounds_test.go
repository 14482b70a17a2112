package record

import (
	"strings"
	"testing"
)

func TestReadRefusesCountsPelNeverWrites(t *testing.T) {
	ok := `{"seq":0,"id":"a","task":"t","status":"ok","prompt_tokens":30,"output_tokens":8}`
	for _, c := range []struct{ name, line, errHas string }{
		{"plausible", ok, ""},
		{"2^62 output tokens", strings.Replace(ok, `"output_tokens":8`, `"output_tokens":4611686018427387904`, 1), "line 2: output_tokens 4611686018427387904 is outside 0..16777216"},
		{"a chunk of record.MaxTokens", strings.Replace(ok, `"output_tokens":8`, `"output_tokens":8,"chunk_us":[5,9],"chunk_tokens":[1,16777216]`, 1), ""},
		{"a chunk of 2^62 tokens", strings.Replace(ok, `"output_tokens":8`, `"output_tokens":8,"chunk_us":[5,9],"chunk_tokens":[1,4611686018427387904]`, 1), "line 2: chunk_tokens[1] 4611686018427387904 is outside 0..16777216"},
		{"a chunk of one token past the bound", strings.Replace(ok, `"output_tokens":8`, `"output_tokens":8,"chunk_us":[5,9],"chunk_tokens":[1,16777217]`, 1), "line 2: chunk_tokens[1] 16777217 is outside"},
		{"a negative chunk", strings.Replace(ok, `"output_tokens":8`, `"output_tokens":8,"chunk_us":[5,9],"chunk_tokens":[-3,1]`, 1), "line 2: chunk_tokens[0] -3 is outside"},
		{"negative prompt", strings.Replace(ok, `"prompt_tokens":30`, `"prompt_tokens":-1`, 1), "line 2: prompt_tokens -1 is outside"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := ok + "\n" + c.line + "\n"
			for name, read := range map[string]func() error{
				"Read": func() error {
					_, err := Read(strings.NewReader(in), func(*Record) error { return nil })
					return err
				},
				"ReadParallel": func() error {
					_, err := ReadParallel(strings.NewReader(in), 2, nil, func(*Record) error { return nil })
					return err
				},
			} {
				err := read()
				if (c.errHas == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.errHas)) {
					t.Errorf("%s: %v, want %q", name, err, c.errHas)
				}
			}
		})
	}
}
