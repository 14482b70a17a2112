package redact

import (
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// textRE finds the identifiers free text may hold, leftmost first: a URL, a bracketed IPv6
// address with its port, an IPv4 address with its port, host:port, an absolute path (Unix
// or Windows), a bare IPv6 address, and a 16-, 32- or 64-digit hex token (an id or a
// prompt hash, replaced only when it is one this Redactor has seen).
var textRE = regexp.MustCompile(strings.Join([]string{
	`(?P<url>\b[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>\\` + "`" + `]+)`,
	`(?P<v6p>\[[0-9A-Fa-f:.]+(?:%[A-Za-z0-9]+)?\](?::[0-9]{1,5})?)`,
	`(?P<v4>\b(?:[0-9]{1,3}\.){3}[0-9]{1,3}(?::[0-9]{1,5}\b)?)`,
	`(?P<hp>\b[A-Za-z][A-Za-z0-9-]*(?:\.[A-Za-z0-9-]+)*:[0-9]{2,5}\b)`,
	`(?P<path>~?/[A-Za-z0-9._@%+~=,-]+(?:/[A-Za-z0-9._@%+~=,-]*)+)`,
	`(?P<win>\b[A-Za-z]:\\[^\s"'<>]+)`,
	`(?P<v6>[0-9A-Fa-f:]*::[0-9A-Fa-f:]*[0-9][0-9A-Fa-f:]*|\b(?:[0-9A-Fa-f]{1,4}:){7}[0-9A-Fa-f]{1,4}\b)`,
	`(?P<hex>\b(?:[0-9A-Fa-f]{64}|[0-9A-Fa-f]{32}|[0-9A-Fa-f]{16})\b)`,
}, "|"))

var textGroups = textRE.SubexpNames()

// Text returns s with every identifier it recognises replaced by its pseudonym: the forms
// textRE finds, then every original this Redactor has already replaced elsewhere (a host
// name seen in a URL or a label, a user name, a path) wherever it stands as a word. Text
// that holds none comes back unchanged.
func (r *Redactor) Text(s string) string {
	if s == "" || isTimestamp(s) {
		return s
	}
	if !needsScan(s) {
		return r.literalPass(s)
	}
	if ms := textRE.FindAllStringSubmatchIndex(s, -1); ms != nil {
		var b strings.Builder
		last := 0
		for _, m := range ms {
			rep, ok := r.match(s, m)
			if !ok {
				continue
			}
			b.WriteString(s[last:m[0]])
			b.WriteString(rep)
			last = m[1]
		}
		if last > 0 {
			b.WriteString(s[last:])
			s = b.String()
		}
	}
	return r.literalPass(s)
}

func (r *Redactor) match(s string, m []int) (string, bool) {
	for g := 1; g < len(textGroups); g++ {
		if m[2*g] < 0 {
			continue
		}
		v := s[m[2*g]:m[2*g+1]]
		if r.IsPseudonym(v) {
			return "", false
		}
		switch textGroups[g] {
		case "url":
			return r.url(strings.TrimRight(v, ".,;:)]}")) + v[len(strings.TrimRight(v, ".,;:)]}")):], true
		case "v6p":
			host, port := v, ""
			if i := strings.LastIndex(v, "]:"); i >= 0 {
				host, port = v[:i+1], v[i+2:]
			}
			a := strings.Trim(host, "[]")
			if i := strings.IndexByte(a, '%'); i >= 0 {
				a = a[:i]
			}
			if _, err := netip.ParseAddr(a); err != nil {
				return "", false
			}
			out := r.Host(a)
			if port != "" {
				out += ":" + r.Port(port)
			}
			return out, true
		case "v4":
			host, port, _ := strings.Cut(v, ":")
			if _, err := netip.ParseAddr(host); err != nil {
				return "", false
			}
			out := r.Host(host)
			if port != "" {
				out += ":" + r.Port(port)
			}
			return out, true
		case "hp":
			host, port, _ := strings.Cut(v, ":")
			if !hostLike(host) && !r.Seen(strings.ToLower(host)) {
				return "", false
			}
			return r.Host(host) + ":" + r.Port(port), true
		case "path", "win":
			if st := m[2*g]; st > 0 && wordByte(s[st-1]) {
				return "", false // a relative path or a MIME type (application/json)
			}
			return r.Path(v), true
		case "v6":
			a, err := netip.ParseAddr(v)
			if err != nil || !a.Is6() {
				return "", false
			}
			return r.Host(v), true
		case "hex":
			id := r.seenHexAs(ID, v)
			ph := !r.KeepPromptHashes && r.seenHexAs(PromptHash, v)
			switch {
			case id:
				return r.ID(v), true
			case ph:
				return r.PromptHash(v), true
			}
			return "", false
		}
	}
	return "", false
}

// url is u with its host and port replaced, its user information removed, and a file
// URL's path replaced; an unparseable URL is replaced whole.
func (r *Redactor) url(v string) string {
	u, err := url.Parse(v)
	if err != nil {
		return "url-" + r.macHex(Host, v, 10) + ".invalid"
	}
	if u.User != nil {
		r.User(u.User.Username())
		u.User = nil
	}
	if h := u.Hostname(); h != "" {
		host := r.Host(h)
		if p := u.Port(); p != "" {
			host += ":" + r.Port(p)
		}
		u.Host = host
	}
	if u.Scheme == "file" && u.Path != "" {
		u.Path = "/" + r.Path(u.Path)
	}
	if u.RawQuery != "" {
		u.RawQuery = r.literalPass(u.RawQuery)
	}
	return u.String()
}

// needsScan reports whether textRE could match in s: it needs one of / : . [ \ or a run of
// 16 hex digits. Most strings of a run (task names, statuses, numbers' units) have none.
func needsScan(s string) bool {
	if strings.ContainsAny(s, "/:.[\\") {
		return true
	}
	run := 0
	for i := 0; i < len(s); i++ {
		if c := s[i]; '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' {
			if run++; run >= 16 {
				return true
			}
		} else {
			run = 0
		}
	}
	return false
}

// isTimestamp reports an RFC 3339 time as pel writes them (2026-12-02T02:19:43.548135542Z):
// the most common string of a run, and never an identifier.
func isTimestamp(s string) bool {
	if len(s) < 20 || len(s) > 35 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || c == '-' || c == ':' || c == '.' || c == 'T' || c == 'Z' || c == '+') {
			return false
		}
	}
	return true
}

// hostLike is a name that can only be a host in host:port: it has a dot or a hyphen
// between letters, or is localhost ("p99:120" is not taken for a host).
func hostLike(h string) bool {
	if i := strings.LastIndexByte(h, '.'); i >= 0 && sourceExt[strings.ToLower(h[i+1:])] {
		return false // CuptiActivityProfiler.cpp:976 is a source line, not a host
	}
	return strings.EqualFold(h, "localhost") || strings.ContainsAny(h, ".-")
}

var sourceExt = map[string]bool{"c": true, "cc": true, "cpp": true, "cxx": true, "h": true, "hpp": true, "cu": true, "cuh": true,
	"py": true, "go": true, "rs": true, "java": true, "js": true, "ts": true, "lua": true}

func wordByte(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c == '.' || c == '-'
}

func alnumByte(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// literals is the set of originals to find in free text wherever they stand as a word.
type literals struct {
	set    map[string]bool
	sorted []string // longest first; nil when set changed
	// byKey indexes the set by each original's first keyLen bytes (the whole of a shorter
	// one), and keyLens has bit k-1 set when some key has k bytes: the originals a text
	// holds are then found by a probe or two at each word start, instead of one scan of the
	// text per original, which made a redaction quadratic in the originals it learns (an
	// export whose strings each name another path).
	byKey   map[string][]string
	keyLens uint8
}

// keyLen is the length of byKey's keys: long enough that a probe rarely finds an original
// that does not follow (few originals share their first four bytes at a word start), short
// enough that a short original (a three-letter user name) costs one more probe length only.
const keyLen = 4

// indexFrom is the set size from which in probes byKey instead of scanning for each
// original. A scan costs one strings.Contains of the text per original; a probe costs a map
// lookup at each word start, whatever the number of originals. BenchmarkLiteralsIn (a
// Kineto-like JSON text; 2-core machine, load 6-13; go test -bench BenchmarkLiteralsIn
// -benchtime 300x ./redact) gives the scan 667 MB/s at 4 originals, 520 at 8, 125-233 at
// 16 and 11-16 at 256, the index 175-290 MB/s at every size: they cross between 8 and 16.
const indexFrom = 16

func newLiterals() *literals { return &literals{set: map[string]bool{}, byKey: map[string][]string{}} }

func (l *literals) add(s string) {
	if s == "" || l.set[s] {
		return
	}
	l.set[s] = true
	l.sorted = nil
	k := s[:min(len(s), keyLen)]
	l.byKey[k] = append(l.byKey[k], s)
	l.keyLens |= 1 << (len(k) - 1)
}

func longestFirst(a, b string) int {
	if len(a) != len(b) {
		return len(b) - len(a)
	}
	return strings.Compare(a, b)
}

func (l *literals) list() []string {
	if l.sorted == nil {
		l.sorted = make([]string, 0, len(l.set))
		for s := range l.set {
			l.sorted = append(l.sorted, s)
		}
		slices.SortFunc(l.sorted, longestFirst)
	}
	return l.sorted
}

// in returns the originals that occur in s starting at a word start (where a bounded
// occurrence can start; see bounded), longest first: every original findLiteral could
// find in s, and perhaps some it would not (an occurrence that does not end as a word).
func (l *literals) in(s string) []string {
	if len(l.set) < indexFrom {
		var out []string
		for _, lit := range l.list() {
			if strings.Contains(s, lit) {
				out = append(out, lit)
			}
		}
		return out
	}
	var out []string
	seen := map[string]bool{}
	for i := 0; i < len(s); i++ {
		if i > 0 && wordByte(s[i-1]) {
			continue
		}
		for k := 1; k <= keyLen && i+k <= len(s); k++ {
			if l.keyLens&(1<<(k-1)) == 0 {
				continue
			}
			for _, lit := range l.byKey[s[i:i+k]] {
				if !seen[lit] && strings.HasPrefix(s[i:], lit) {
					seen[lit] = true
					out = append(out, lit)
				}
			}
		}
	}
	slices.SortFunc(out, longestFirst)
	return out
}

// bounded reports whether s[i:j] stands as a word: no name character touches it before,
// and none after (a dot after it ends a sentence unless a name goes on after the dot).
func bounded(s string, i, j int) bool {
	if i > 0 && wordByte(s[i-1]) {
		return false
	}
	if j < len(s) {
		c := s[j]
		if c == '.' {
			return j+1 >= len(s) || !alnumByte(s[j+1])
		}
		if wordByte(c) {
			return false
		}
	}
	return true
}

// findLiteral is the first bounded occurrence of lit in s at or after from (-1: none).
func findLiteral(s, lit string, from int) int {
	for from <= len(s)-len(lit) {
		k := strings.Index(s[from:], lit)
		if k < 0 {
			return -1
		}
		k += from
		if bounded(s, k, k+len(lit)) {
			return k
		}
		from = k + 1
	}
	return -1
}

// literalPass replaces each bounded occurrence of a known original in s by its pseudonym.
func (r *Redactor) literalPass(s string) string {
	r.mu.Lock()
	lits := r.lit.in(s)
	r.mu.Unlock()
	for _, lit := range lits {
		if !strings.Contains(s, lit) {
			continue // an earlier, longer original's pseudonym took its place
		}
		p := r.pseudonymOf(lit)
		if p == "" {
			continue
		}
		var b strings.Builder
		last, from := 0, 0
		for {
			k := findLiteral(s, lit, from)
			if k < 0 {
				break
			}
			b.WriteString(s[last:k])
			b.WriteString(p)
			last, from = k+len(lit), k+len(lit)
			r.noteOccurrence(lit)
		}
		if last > 0 {
			b.WriteString(s[last:])
			s = b.String()
		}
	}
	return s
}

// pseudonymOf is the pseudonym already given to the original lit (any kind).
func (r *Redactor) pseudonymOf(lit string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range []Kind{Host, IP, User, Path, GPUUUID, ID, Process} {
		if p, ok := r.memo[memoKey{k, lit}]; ok {
			return p
		}
		if k == Host || k == IP {
			if p, ok := r.memo[memoKey{k, strings.ToLower(strings.TrimSuffix(lit, "."))}]; ok {
				return p
			}
		}
	}
	if a, err := netip.ParseAddr(lit); err == nil {
		if p, ok := r.memo[memoKey{IP, a.Unmap().String()}]; ok {
			return p
		}
	}
	return ""
}

func (r *Redactor) noteOccurrence(lit string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, m := range r.seen {
		if m[lit] || m[strings.ToLower(lit)] {
			r.occ[k]++
			return
		}
	}
}

// Leak is an original found by Check: its kind and where, never the value.
type Leak struct {
	Kind Kind
	// Offset is the byte offset of the first occurrence in the data checked.
	Offset int
}

// Check looks for any original this Redactor replaced in data (a rewritten file): a word
// that is a known host, address, user, path, UUID or non-hex id; a hex token that is a
// known id or prompt hash; ":PORT" for a known port of four or five digits. It returns
// one Leak per kind found.
func (r *Redactor) Check(data string) []Leak {
	r.mu.Lock()
	lits := r.lit.in(data)
	ports := make([]string, 0, len(r.seen[Port]))
	for p := range r.seen[Port] {
		if len(p) >= 4 {
			ports = append(ports, p)
		}
	}
	r.mu.Unlock()
	found := map[Kind]int{}
	add := func(k Kind, off int) {
		if _, ok := found[k]; !ok {
			found[k] = off
		}
	}
	for _, lit := range lits {
		if k := findLiteral(data, lit, 0); k >= 0 {
			add(r.kindOf(lit), k)
		}
	}
	for _, p := range ports {
		for from := 0; ; {
			k := strings.Index(data[from:], ":"+p)
			if k < 0 {
				break
			}
			k += from
			end := k + 1 + len(p)
			// host:PORT or ]:PORT, not a JSON number ("v":8000) nor a time (12:30)
			hostBefore := k > 0 && (alnumByte(data[k-1]) || data[k-1] == ']' || data[k-1] == '-' || data[k-1] == '.')
			if hostBefore && (end >= len(data) || !('0' <= data[end] && data[end] <= '9')) && !timeBefore(data, k) {
				add(Port, k)
				break
			}
			from = end
		}
	}
	for _, m := range hexTokens(data) {
		v := data[m[0]:m[1]]
		id := r.seenHexAs(ID, v)
		ph := !r.KeepPromptHashes && r.seenHexAs(PromptHash, v)
		if id {
			add(ID, m[0])
		} else if ph {
			add(PromptHash, m[0])
		}
	}
	var out []Leak
	for k, off := range found {
		out = append(out, Leak{Kind: k, Offset: off})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out
}

// timeBefore: the colon at k follows a clock's hours or minutes (T02:19, 12:30:PORT).
func timeBefore(data string, k int) bool {
	return k >= 2 && '0' <= data[k-1] && data[k-1] <= '9' && '0' <= data[k-2] && data[k-2] <= '9' && (k == 2 || data[k-3] == 'T' || data[k-3] == ':' || data[k-3] == ' ')
}

// hexTokens are the spans of data that are runs of 16, 32 or 64 hex digits standing as a
// word (\b on both sides, as textRE's hex group): a scan, not a regexp, for it runs over
// every byte of a package.
func hexTokens(data string) [][2]int {
	var out [][2]int
	for i := 0; i < len(data); {
		if !isHexByte(data[i]) {
			i++
			continue
		}
		j := i
		for j < len(data) && isHexByte(data[j]) {
			j++
		}
		n := j - i
		if (n == 16 || n == 32 || n == 64) && (i == 0 || !isWordRune(data[i-1])) && (j == len(data) || !isWordRune(data[j])) {
			out = append(out, [2]int{i, j})
		}
		i = j
	}
	return out
}

func isHexByte(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// isWordRune is regexp's \w for a byte.
func isWordRune(c byte) bool { return alnumByte(c) || c == '_' }

func (r *Redactor) kindOf(lit string) Kind {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range []Kind{Host, IP, User, Path, GPUUUID, ID, Process} {
		if r.seen[k][lit] || r.seen[k][strings.ToLower(lit)] {
			return k
		}
	}
	if _, err := netip.ParseAddr(lit); err == nil {
		return IP
	}
	return Host
}
