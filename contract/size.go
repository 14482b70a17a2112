package contract

import "fmt"

// MaxYAMLValues bounds the values (scalars, keys, list items) a contract may hold. Decoding
// YAML into its node tree costs ~200 bytes a node, so a 4 MiB file of "1," (two million
// values) held 420 MB before a single check ran; 100,000 values is a contract of thousands
// of lines or an empirical distribution of 100,000 lengths, and stays under ~40 MB.
const MaxYAMLValues = 100_000

// countValues counts, without building anything, an upper bound on the YAML values in data:
// outside quotes and comments, every non-blank line, flow separator (',', '[', '{') and
// key (':' before a space or a line end) may start one. It returns the line at which the
// count passes max, 0 when it never does.
func countValues(data []byte, max int) int {
	n, line := 0, 1
	blank := true
	var quote byte
	for i := 0; i < len(data); i++ {
		c := data[i]
		if c == '\n' {
			line++
			if !blank {
				n++
			}
			blank = true
			if quote == '\'' || quote == '"' {
				continue // a quoted scalar may span lines
			}
			if n > max {
				return line - 1
			}
			continue
		}
		if quote != 0 {
			switch {
			case quote == '"' && c == '\\':
				i++
			case c == quote && quote == '\'' && i+1 < len(data) && data[i+1] == '\'':
				i++ // '' inside a single-quoted scalar
			case c == quote:
				quote = 0
			}
			continue
		}
		switch c {
		case ' ', '\t', '\r':
			continue
		case '#':
			if i == 0 || data[i-1] == ' ' || data[i-1] == '\t' || data[i-1] == '\n' {
				for i+1 < len(data) && data[i+1] != '\n' {
					i++
				}
				continue
			}
		case '"', '\'':
			if blank || (i > 0 && (data[i-1] == ' ' || data[i-1] == '[' || data[i-1] == '{' || data[i-1] == ',')) {
				quote = c
			}
		case ',', '[', '{':
			n++
		case ':':
			if i+1 == len(data) || data[i+1] == ' ' || data[i+1] == '\n' || data[i+1] == '\r' {
				n++
			}
		}
		blank = false
		if n > max {
			return line
		}
	}
	if !blank {
		n++
	}
	if n > max {
		return line
	}
	return 0
}

func tooManyValues(line int) string {
	return fmt.Sprintf("more than %d YAML values by this line (MaxYAMLValues): a contract names a workload, not its data; give long length lists a dataset file", MaxYAMLValues)
}
