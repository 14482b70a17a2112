// Package redact minimises the identifiers in what pel hands to someone else: an evidence
// package (pel pack) and a profiler trace (pel trace --redact).
//
// A Redactor replaces host names, IP addresses, ports, request/trace/span ids, file-system
// paths, user names, process names, GPU UUIDs and prompt hashes by pseudonyms. A pseudonym
// is a keyed HMAC-SHA256 of the original under a random 256-bit key made for one Redactor
// and never written anywhere: equal originals get equal pseudonyms, so the joins between
// files (records ↔ spans ↔ metrics ↔ evidence) keep working inside one package, while a
// pseudonym can be neither reversed nor matched against another package or a dictionary of
// likely values (a plain hash of an IP address or a prompt can). A pseudonym keeps the shape
// the readers need: a hex id stays hex of the same length, a host stays a host name (under
// the reserved .invalid domain, RFC 6761 §6.4), a port stays a port number, a path keeps its
// file extensions.
//
// The Redactor counts what it replaced per kind (never keeping the originals anywhere but in
// memory) and remembers the originals it saw so that Check can prove none survived.
package redact

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// ErrLeak is returned when a rewritten copy still holds an original: nothing is written.
var ErrLeak = errors.New("an original identifier survived redaction")

// Kind names a kind of identifier, as the manifest lists it.
type Kind string

// The kinds of values a Redactor replaces or removes.
const (
	Host       Kind = "host name"
	IP         Kind = "IP address"
	Port       Kind = "port"
	ID         Kind = "request/trace/span id"
	Path       Kind = "file-system path"
	User       Kind = "user name"
	Process    Kind = "process name"
	GPUUUID    Kind = "GPU UUID"
	PromptHash Kind = "prompt hash"
	// Text is prompt and output text (pel run --keep-text): removed, never pseudonymised.
	Text Kind = "prompt/output text"
	// Env is an environment or command-line value of a profiler's capture: removed.
	Env Kind = "environment/command line"
)

// Scheme is the manifest's description of the pseudonyms.
const Scheme = "HMAC-SHA256 under a random 256-bit key made for this package and never stored: " +
	"equal originals have equal pseudonyms inside this package only; a pseudonym cannot be reversed, " +
	"recomputed, or matched against another package"

// Count is what was done to one kind of value.
type Count struct {
	Kind Kind `json:"kind"`
	// Distinct originals seen; Occurrences replaced (or removed).
	Distinct    int    `json:"distinct,omitempty"`
	Occurrences int    `json:"occurrences"`
	Action      string `json:"action"` // "replaced" or "removed"
}

// Redactor makes pseudonyms under one key. It is safe for concurrent use.
type Redactor struct {
	// KeepPromptHashes leaves prompt_sha256 values as they are (pel pack --keep-prompt-hashes):
	// two packages can then tell whether they sent the same prompts.
	KeepPromptHashes bool

	key [32]byte
	ctx context.Context

	mu     sync.Mutex
	memo   map[memoKey]string
	pseudo map[string]bool // every pseudonym made: never redacted again
	seen   map[Kind]map[string]bool
	// seenHex holds the hex ids and prompt hashes seen as 16-byte digests, not strings:
	// there is one per task, and a long run has millions.
	seenHex map[Kind]map[digest]bool
	occ     map[Kind]int
	removed map[Kind]bool
	lit     *literals
}

type memoKey struct {
	kind Kind
	s    string
}

// New returns a Redactor with a fresh random key.
func New() *Redactor {
	r := &Redactor{memo: map[memoKey]string{}, pseudo: map[string]bool{}, seen: map[Kind]map[string]bool{},
		seenHex: map[Kind]map[digest]bool{}, occ: map[Kind]int{}, removed: map[Kind]bool{}, lit: newLiterals()}
	if _, err := rand.Read(r.key[:]); err != nil {
		panic("redact: no randomness: " + err.Error()) // crypto/rand never fails on Linux
	}
	return r
}

func (r *Redactor) mac(kind Kind, s string) []byte {
	h := hmac.New(sha256.New, r.key[:])
	h.Write([]byte(kind))
	h.Write([]byte{0})
	h.Write([]byte(s))
	return h.Sum(nil)
}

func (r *Redactor) macHex(kind Kind, s string, n int) string {
	b := r.mac(kind, s)
	for len(b)*2 < n {
		b = append(b, r.mac(kind, string(b))...)
	}
	return hex.EncodeToString(b)[:n]
}

type digest [16]byte

func digestOf(s string) digest {
	h := sha256.Sum256([]byte(s))
	return digest(h[:16])
}

// noteHex records one replaced hex id or prompt hash (kept as a digest), and returns p.
func (r *Redactor) noteHex(kind Kind, s, p string) string {
	d := digestOf(strings.ToLower(s))
	r.mu.Lock()
	defer r.mu.Unlock()
	r.occ[kind]++
	if r.seenHex[kind] == nil {
		r.seenHex[kind] = map[digest]bool{}
	}
	r.seenHex[kind][d] = true
	return p
}

// seenHexAs reports whether the hex token v is an original of kind.
func (r *Redactor) seenHexAs(kind Kind, v string) bool {
	d := digestOf(strings.ToLower(v))
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seenHex[kind][d]
}

// note records one replaced occurrence of s (of kind) made into p, and returns p.
func (r *Redactor) note(kind Kind, s, p string, literal bool) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.occ[kind]++
	if r.seen[kind] == nil {
		r.seen[kind] = map[string]bool{}
	}
	if !r.seen[kind][s] {
		r.seen[kind][s] = true
		if literal {
			r.lit.add(s)
		}
	}
	r.pseudo[p] = true
	return p
}

func (r *Redactor) memoized(kind Kind, s string, make func() string) (string, bool) {
	r.mu.Lock()
	p, ok := r.memo[memoKey{kind, s}]
	r.mu.Unlock()
	if ok {
		return p, true
	}
	p = make()
	r.mu.Lock()
	r.memo[memoKey{kind, s}] = p
	r.mu.Unlock()
	return p, false
}

// IsPseudonym reports whether s is a pseudonym this Redactor made (it is left as it is).
func (r *Redactor) IsPseudonym(s string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pseudo[s]
}

// Removed counts one removed value of kind (text, an environment): nothing replaces it.
func (r *Redactor) Removed(kind Kind) {
	r.mu.Lock()
	r.occ[kind]++
	r.removed[kind] = true
	r.mu.Unlock()
}

// ID returns the pseudonym of a request, trace or span id: hex of the same length for a hex
// id (a W3C trace id stays 32 lowercase hex digits), else "id-" and 16 hex digits.
func (r *Redactor) ID(s string) string {
	if s == "" {
		return s
	}
	if isHex(s) && len(s) >= 8 && len(s) <= 64 {
		// Not memoized: one id per task, and the HMAC is cheaper than holding them all.
		p := r.macHex(ID, strings.ToLower(s), len(s))
		if strings.ToUpper(s) == s && strings.ToLower(s) != s {
			p = strings.ToUpper(p)
		}
		return r.noteHex(ID, s, p)
	}
	if r.IsPseudonym(s) {
		return s
	}
	p, _ := r.memoized(ID, s, func() string { return "id-" + r.macHex(ID, s, 16) })
	return r.note(ID, s, p, false)
}

// PromptHash returns the pseudonym of a prompt's sha256 (64 hex digits, so that equal
// prompts stay equal), or h itself when KeepPromptHashes.
func (r *Redactor) PromptHash(h string) string {
	if h == "" || r.KeepPromptHashes {
		return h
	}
	return r.noteHex(PromptHash, h, r.macHex(PromptHash, strings.ToLower(h), len(h)))
}

// Host returns the pseudonym of a host name or an IP address (without a port):
// host-<hex>.invalid or ip-<hex>.invalid. Case is ignored, as DNS ignores it.
func (r *Redactor) Host(h string) string {
	if h == "" || r.IsPseudonym(h) {
		return h
	}
	kind, prefix, norm := Host, "host-", strings.ToLower(strings.TrimSuffix(h, "."))
	if a, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
		kind, prefix, norm = IP, "ip-", a.Unmap().String()
	}
	p, _ := r.memoized(kind, norm, func() string { return prefix + r.macHex(kind, norm, 10) + ".invalid" })
	r.note(kind, norm, p, true)
	if norm != h {
		r.mu.Lock()
		r.lit.add(h)
		r.mu.Unlock()
	}
	return p
}

// Port returns the pseudonym of a TCP port: a number in 20000-59999 other than p itself.
func (r *Redactor) Port(p string) string {
	n, err := strconv.Atoi(p)
	if err != nil || n < 0 || n > 65535 || r.IsPseudonym(p) {
		return p
	}
	ps, _ := r.memoized(Port, p, func() string {
		v := 20000 + int(binary.BigEndian.Uint32(r.mac(Port, p))%40000)
		if v == n {
			v = 20000 + (v-20000+1)%40000
		}
		return strconv.Itoa(v)
	})
	return r.note(Port, p, ps, false)
}

// Path returns the pseudonym of a file-system path: path-<hex> followed by the file's
// extensions (.trace.json.gz stays, so what reads a file by its name still does). A user
// name in a home directory (/home/NAME, /Users/NAME) is remembered as a user name.
func (r *Redactor) Path(p string) string {
	if p == "" || r.IsPseudonym(p) {
		return p
	}
	if u := homeUser(p); u != "" {
		r.User(u)
	}
	ps, _ := r.memoized(Path, p, func() string { return "path-" + r.macHex(Path, p, 10) + extensions(p) })
	return r.note(Path, p, ps, len(p) >= 4)
}

// User returns the pseudonym of a user name.
func (r *Redactor) User(u string) string {
	if u == "" || r.IsPseudonym(u) {
		return u
	}
	p, _ := r.memoized(User, u, func() string { return "user-" + r.macHex(User, u, 8) })
	return r.note(User, u, p, len(u) >= 2)
}

// Process returns the pseudonym of a process or thread name.
func (r *Redactor) Process(s string) string {
	if s == "" || r.IsPseudonym(s) {
		return s
	}
	p, _ := r.memoized(Process, s, func() string { return "process-" + r.macHex(Process, s, 8) })
	return r.note(Process, s, p, false)
}

// GPU returns the pseudonym of a GPU UUID (GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx keeps
// its shape, so a reader matching the form still does).
func (r *Redactor) GPU(u string) string {
	if u == "" || r.IsPseudonym(u) {
		return u
	}
	p, _ := r.memoized(GPUUUID, u, func() string {
		h := r.macHex(GPUUUID, u, 32)
		prefix := ""
		if strings.HasPrefix(u, "GPU-") || strings.HasPrefix(u, "MIG-") {
			prefix = u[:4]
		}
		return prefix + h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
	})
	return r.note(GPUUUID, u, p, len(u) >= 8)
}

// Counts lists what was replaced or removed, by kind (a stable order).
func (r *Redactor) Counts() []Count {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Count
	for k, n := range r.occ {
		c := Count{Kind: k, Distinct: len(r.seen[k]) + len(r.seenHex[k]), Occurrences: n, Action: "replaced"}
		if r.removed[k] {
			c.Action = "removed"
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out
}

// Seen reports whether s is an original this Redactor replaced (any kind).
func (r *Redactor) Seen(s string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.seen {
		if m[s] {
			return true
		}
	}
	return false
}

func isHex(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// extensions is the chain of short extensions ending p's base name (".trace.json.gz").
func extensions(p string) string {
	base := p
	if i := strings.LastIndexAny(base, `/\`); i >= 0 {
		base = base[i+1:]
	}
	if i := strings.IndexByte(base, '('); i >= 0 { // a Python frame: file.py(12)
		base = base[:i]
	}
	parts := strings.Split(base, ".")
	if len(parts) < 2 {
		return ""
	}
	ext := ""
	for i := len(parts) - 1; i >= 1 && i >= len(parts)-4; i-- {
		e := parts[i]
		if !knownExt[strings.ToLower(e)] {
			break // gpu7.corp.example.json keeps .json, not the domain
		}
		ext = "." + e + ext
	}
	return ext
}

// knownExt are the extensions a pseudonymised path keeps: those that say how to read a file.
var knownExt = map[string]bool{"gz": true, "zst": true, "xz": true, "bz2": true, "tar": true, "json": true, "jsonl": true,
	"trace": true, "pt": true, "sqlite": true, "nsys-rep": true, "qdrep": true, "yaml": true, "yml": true, "csv": true,
	"html": true, "txt": true, "log": true, "py": true, "prom": true, "pb": true}

// homeUser is NAME in /home/NAME/..., /Users/NAME/..., /u/NAME... ("" when none).
func homeUser(p string) string {
	for _, pre := range []string{"/home/", "/Users/", "/homes/"} {
		if i := strings.Index(p, pre); i >= 0 {
			rest := p[i+len(pre):]
			if j := strings.IndexAny(rest, `/`); j > 0 {
				return rest[:j]
			} else if j < 0 && rest != "" {
				return rest
			}
		}
	}
	return ""
}

// ResetCounts forgets the counts (not the pseudonyms, nor the originals to look for): a
// first pass that only learns the originals is then not counted twice.
func (r *Redactor) ResetCounts() {
	r.mu.Lock()
	r.occ = map[Kind]int{}
	r.removed = map[Kind]bool{}
	r.mu.Unlock()
}

// SetContext makes the long loops (the lines of a file, the events of a trace, the rows of
// a table) stop with ctx's error once it is done (Ctrl-C).
func (r *Redactor) SetContext(ctx context.Context) { r.ctx = ctx }

// Stopped is the context's error once it is done, else nil.
func (r *Redactor) Stopped() error {
	if r.ctx == nil {
		return nil
	}
	return r.ctx.Err()
}
