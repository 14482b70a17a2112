package contract

import _ "embed"

//go:embed example.yaml
var example []byte

// Example returns a commented contract that uses every key (a test parses it), for
// `pel contract init`.
func Example() []byte { return append([]byte(nil), example...) }
