// Package scrub makes outside text safe to store and print: URLs lose their credentials,
// and text from servers loses the control characters a terminal would obey.
//
// pel stores and prints URLs it was given (--target, --metrics, --dcgm, --prometheus, a
// redirect's Location) and text servers sent (error bodies, model ids, parse errors). A URL
// may carry a password (user:pass@) or a token in its query (?token=, ?api_key=); a server
// may send ANSI escapes (retitle the terminal, clear the screen) or bidi overrides that
// reorder what the reader sees. Both are removed here, in one place, before anything is
// written to requests.jsonl, metrics.jsonl, evidence.json, a report or a terminal.
package scrub

import (
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Redacted replaces a secret.
const Redacted = "REDACTED"

// sensitiveKeys are substrings of query parameter names whose values are credentials
// (token, access_token, api_key, apikey, key, secret, password, passwd, pwd, auth,
// signature, sig, X-Amz-Credential, session, jwt). Matching is case-insensitive.
var sensitiveKeys = []string{"token", "key", "secret", "pass", "pwd", "auth", "sig", "cred", "session", "jwt"}

// userinfoRE finds "scheme://userinfo@" in text that does not parse as one URL.
var userinfoRE = regexp.MustCompile(`(?i)([a-z][a-z0-9+.-]*://)[^/?#@\s]*@`)

// URL returns s without a password or user name (user:pass@ is dropped) and with the value
// of every credential-like query parameter replaced by REDACTED. It never fails: text that
// is not a URL still loses anything of the form scheme://user@.
func URL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Opaque != "" {
		return userinfoRE.ReplaceAllString(s, "$1")
	}
	changed := false
	if u.User != nil {
		u.User = nil
		changed = true
	}
	if u.RawQuery != "" {
		q, qerr := url.ParseQuery(u.RawQuery)
		if qerr != nil {
			u.RawQuery = Redacted // an unparseable query may hide anything
			changed = true
		} else {
			for k, vs := range q {
				if !sensitive(k) {
					continue
				}
				for i := range vs {
					vs[i] = Redacted
				}
				changed = true
			}
			if changed {
				u.RawQuery = q.Encode()
			}
		}
	}
	if !changed {
		return s
	}
	return u.String()
}

func sensitive(key string) bool {
	k := strings.ToLower(key)
	for _, s := range sensitiveKeys {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}

// Text returns s as one line fit for a terminal: C0 and C1 control characters (ESC and CSI
// included), DEL and the bidi controls that reorder text become spaces or are dropped,
// invalid UTF-8 becomes '?', and runs of white space collapse to one space.
func Text(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if b := s[i]; b < 0x20 || b == 0x7f || b >= 0x80 {
			clean = false
			break
		}
	}
	if clean && !strings.Contains(s, "  ") && strings.TrimSpace(s) == s {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			r = '?'
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
			r = ' ' // tab, newline, ESC, CSI...: a separator at most
		case bidi(r):
			continue
		}
		if r == ' ' {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}

// Terminal is Text for multi-line output: each line is made safe, and the lines are kept.
func Terminal(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = Text(l)
	}
	return strings.Join(lines, "\n")
}

// bidi reports the Unicode bidirectional formatting characters (LRE..RLO, LRI..PDI, LRM,
// RLM, ALM), which make a terminal show text in an order other than the one stored.
func bidi(r rune) bool {
	return (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0x200e || r == 0x200f || r == 0x061c
}

// Secret replaces every occurrence of secret (an API key) in s, a string from outside
// about to be stored or printed, with "[API key]": a server or proxy may echo the key in
// any field (an error, a model id, build information, a finish_reason).
func Secret(s, secret string) string {
	if secret == "" || !strings.Contains(s, secret) {
		return s
	}
	return strings.ReplaceAll(s, secret, "[API key]")
}
