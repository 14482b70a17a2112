package contract

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// hashDomain prefixes the hashed bytes so a change to the canonical form (a new field, a
// different encoding) is a deliberate version bump, not a silent change of every hash.
const hashDomain = "pel-contract/v1\n"

// canonicalHash is SHA-256 over hashDomain followed by Canonical(c).
func canonicalHash(c *Contract) string {
	h := sha256.New()
	h.Write([]byte(hashDomain))
	h.Write(c.Canonical())
	return hex.EncodeToString(h.Sum(nil))
}

// Canonical is the contract's canonical JSON: the parsed and defaulted Contract encoded by
// encoding/json (fields in declaration order, map keys sorted, durations in integer
// nanoseconds, numbers in Go's shortest form). Comments, key order, whitespace, YAML
// spelling (1s vs 1000ms, shorthand vs long form) and spelled-out defaults do not change it;
// every value that changes the workload does. Files the contract names (dataset, replay
// trace) enter by the path as written, not by their contents.
func (c *Contract) Canonical() []byte {
	b, err := json.Marshal(c)
	if err != nil {
		// Every field is a plain value or JSON-decoded schema; this cannot fail after Parse.
		panic("contract: canonical encoding: " + err.Error())
	}
	return b
}

// SHA256 is the hex SHA-256 of "pel-contract/v1\n" + Canonical(): the identity of the
// workload that travels with every result.
func (c *Contract) SHA256() string { return c.sha }
