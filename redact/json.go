package redact

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
)

// Rules say how a JSON document's string values are treated, by the key that holds them.
// A key not named in any rule gets Text (free-text scanning). Keys match case-insensitively.
type Rules struct {
	// IDs are keys whose values are request, trace or span ids (every value is replaced).
	IDs []string
	// HexIDs are keys whose values are replaced when they are hex ids (a finding's "id" is a
	// rule name and stays).
	HexIDs []string
	// Drop are keys removed with their values, counted under Text.
	Drop []string
	// Skip are keys whose values are kept as they are (numbers pel computed, enum values).
	Skip []string

	once sync.Once
	c    *compiled
}

var (
	hostKeys = set("hostname", "host", "host_name", "host.name", "node", "nodename", "node_name",
		"kubernetes_node", "pod", "pod_name", "kubernetes_pod_name", "exported_pod", "master_addr", "server.address")
	userKeys    = set("user", "username", "user_name", "user.name", "logname")
	uuidKeys    = set("uuid", "gpu_uuid", "gpu-uuid", "gpu.uuid")
	processKeys = set("process_name", "process.executable.name", "process.command", "exe", "comm")
	pathKeys    = set("file", "filename", "path", "dir", "cwd", "traceName", "tracename", "trace_name", "model_path", "trace")
	promptKeys  = set("prompt_sha256")
)

// traceSources prefix the source of a trace's evidence with the trace file's name
// (trace.Result.Source): the name is a path, the prefix says how to read it.
var traceSources = []string{"kineto:", "nsys:"}

func set(ks ...string) map[string]bool {
	m := map[string]bool{}
	for _, k := range ks {
		m[strings.ToLower(k)] = true
	}
	return m
}

// JSON rewrites a decoded JSON value (decoded with UseNumber, so numbers keep their digits)
// under rules, in place where it can, and returns it.
func (r *Redactor) JSON(v any, rules *Rules) any {
	return r.walk(v, "", rules.compile())
}

type compiled struct {
	ids, hexIDs, drop, skip map[string]bool
}

func (ru *Rules) compile() *compiled {
	if ru == nil {
		return &compiled{}
	}
	ru.once.Do(func() {
		ru.c = &compiled{ids: set(ru.IDs...), hexIDs: set(ru.HexIDs...), drop: set(ru.Drop...), skip: set(ru.Skip...)}
	})
	return ru.c
}

func (r *Redactor) walk(v any, key string, c *compiled) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			lk := strings.ToLower(k)
			if c.drop[lk] {
				delete(x, k)
				r.Removed(Text)
				continue
			}
			v := r.walk(e, lk, c)
			if nk := r.mapKey(k); nk != k {
				delete(x, k)
				k = nk
			}
			x[k] = v
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = r.walk(e, key, c)
		}
		return x
	case string:
		return r.Value(key, x, c)
	}
	return v
}

// mapKey is the rewrite of a map key: keys are names (labels, task names, fields) and stay,
// except one that holds an identifier (a map keyed by endpoint URL or by host).
func (r *Redactor) mapKey(k string) string {
	if len(k) < 4 || !strings.ContainsAny(k, "/:.\\@") && !(len(k) >= 16 && isHex(k)) {
		return k
	}
	return r.Text(k)
}

// Value is the rewrite of one string s held by key (lower case) under c.
func (r *Redactor) Value(key, s string, c *compiled) string {
	switch {
	case s == "" || c.skip[key]:
		return s
	case c.ids[key]:
		return r.ID(s)
	case c.hexIDs[key] && isHex(s) && len(s) >= 16:
		return r.ID(s)
	case promptKeys[key]:
		return r.PromptHash(s)
	case hostKeys[key]:
		if strings.ContainsAny(s, ":/") {
			return r.Text(s)
		}
		return r.Host(s)
	case userKeys[key]:
		return r.User(s)
	case uuidKeys[key]:
		return r.GPU(s)
	case processKeys[key]:
		return r.Process(s)
	case pathKeys[key] && !strings.Contains(s, "://"):
		return r.Path(s)
	}
	for _, pre := range traceSources {
		if rest, ok := strings.CutPrefix(s, pre); ok && rest != "" && !strings.ContainsAny(rest, " \t") {
			return pre + r.Path(rest)
		}
	}
	return r.Text(s)
}

// Line rewrites one JSON document (a line of a JSON-lines file) under rules and returns
// its new encoding, without a trailing newline and without HTML escaping.
//
// A line that is an object is taken apart one level only: a value without a string in it
// (an array of chunk timings, a number) is copied as it is, without being decoded.
func (r *Redactor) Line(line []byte, rules *Rules) ([]byte, error) {
	c := rules.compile()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(line, &top); err != nil || top == nil {
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		return Marshal(r.walk(v, "", c), "")
	}
	for k, raw := range top {
		lk := strings.ToLower(k)
		if c.drop[lk] {
			delete(top, k)
			r.Removed(Text)
			continue
		}
		raw = bytes.TrimLeft(raw, " \t\r\n")
		if len(raw) == 0 {
			continue
		}
		switch raw[0] {
		case '"':
			var v string
			if err := json.Unmarshal(raw, &v); err != nil {
				return nil, err
			}
			if nv := r.Value(lk, v, c); nv != v {
				b, err := Marshal(nv, "")
				if err != nil {
					return nil, err
				}
				top[k] = b
			}
		case '[', '{':
			if bytes.IndexByte(raw, '"') < 0 {
				break // numbers only
			}
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.UseNumber()
			var v any
			if err := dec.Decode(&v); err != nil {
				return nil, err
			}
			b, err := Marshal(r.walk(v, lk, c), "")
			if err != nil {
				return nil, err
			}
			top[k] = b
		}
		if nk := r.mapKey(k); nk != k {
			top[nk] = top[k]
			delete(top, k)
		}
	}
	return Marshal(top, "")
}

// Marshal encodes v without HTML escaping (indented by indent when it is not empty), with
// no trailing newline.
func Marshal(v any, indent string) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if indent != "" {
		enc.SetIndent("", indent)
	}
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'}), nil
}
