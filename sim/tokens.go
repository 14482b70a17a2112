package sim

import (
	"hash/fnv"
	"strings"
	"unicode/utf8"
)

// Tokenize approximates a tokenizer without shipping one: one token per whitespace-separated
// word, plus one per further 8 bytes of a long word (BPE splits rare long words). A synthetic
// prompt of N ordinary words therefore counts N tokens, which is how pel's workload generator
// sizes prompts. Ids are word hashes, so equal text gives equal ids and prefix caching works
// on real shared prefixes.
func Tokenize(text string, ids []uint32) []uint32 {
	for _, w := range strings.Fields(text) {
		h := fnv.New32a()
		for len(w) > 0 {
			n := min(len(w), 8)
			for n < len(w) && !utf8.RuneStart(w[n]) {
				n++
			}
			h.Write([]byte(w[:n]))
			ids = append(ids, h.Sum32())
			w = w[n:]
		}
	}
	return ids
}

// vocab is the sim's output: plain words, so acceptance checks like regex '\S' pass. Each
// token is one word with a leading space, as BPE tokens usually are.
var vocab = strings.Fields(`the of and to in a is that for it as was with be by on not he this are
or his from at which but have an they you were her she there been one all we their has would
when if so no will more can out up into do any your what some time could them other than then
now only its over also new these may two first our after most like well way just very where
through back much before good even such because long make many each same work life`)

// tokenText returns the text of output token i of a sequence.
func tokenText(seed uint64, i int) string {
	x := seed*0x9e3779b97f4a7c15 + uint64(i)*0xbf58476d1ce4e5b9
	x ^= x >> 31
	return " " + vocab[x%uint64(len(vocab))]
}
