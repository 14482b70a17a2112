package workload

import (
	"math/rand/v2"
	"strings"
)

// Synthetic prompts are made of whole words from vocab, joined by single spaces. Each is a
// common lowercase English word that byte-level BPE tokenizers hold as ONE token both with
// and without its leading space, and their pre-tokenizers split text before each " word",
// so a prompt of N words is N tokens. Checked with tiktoken-go v0.1.8 (offline loader):
// every word is one token bare and spaced in cl100k_base and o200k_base, and 200 random
// prompts of 1-3000 words each encoded to exactly as many tokens. Llama 3's tokenizer
// extends cl100k's merges (its first 100k tokens), so the same holds there by construction;
// SentencePiece tokenizers (Llama 2, Mistral) keep common words whole too ("▁word") but were
// not measured. What the count leaves out: the chat template's fixed overhead (role
// headers, about 5-10 tokens per message with the chat API) and a beginning-of-sequence
// token. Give Options.Tokenizer to size prompts with the served model's tokenizer.
//
// 256 words, so a request's sequence number fits in 3 words (16.7M distinct salts).
var vocab = strings.Fields(`
the of and to in is was for that on with as by at from his her he she it they we you are be
this an or not but have had has which one all were their there been more when will would who
so if out up about into than them can only other new some what time these two may then do
first any my now such like our over man me even most made after also did many before must
through back years where much your way well down should because each just those people how
too little state good very make world still own see men work long get here between both life
being under never day same another know while last might us great old year off come since
against go came right used take three house use during without again place around however
home small found thought went say part once general high upon school every does got left
number course war until always away something fact though water less public put think almost
hand far head yet government system better set nothing night end why called find going look
later point city next program business give group young days let room side social present
given order national possible rather second face per among form important often things early
white case large big need four within felt along children best church ever least power
development light thing family interest want members mind country area others done turned
although open`)

// words appends n random vocabulary words to b, space-separated (a leading space when b
// is not empty).
func words(b *strings.Builder, n int, r *rand.Rand) {
	for i := 0; i < n; i++ {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(vocab[r.IntN(len(vocab))])
	}
}

// saltWords are the words that make a prompt distinct right after the shared prefix, so a
// prefix cache can only hit the intended prefix: the request's sequence number in base
// len(vocab) (3 words, distinct for 16.7M requests). The same sequence number gives the same
// words in every run: the run's nonce, in front of everything, is what keeps runs apart.
func saltWords(seq int) []string {
	v := len(vocab)
	return []string{vocab[seq%v], vocab[(seq/v)%v], vocab[(seq/(v*v))%v]}
}

// nonceWords spells a run's nonce as NonceWords vocabulary words (base len(vocab)).
func nonceWords(n uint64) []string {
	v := uint64(len(vocab))
	out := make([]string, NonceWords)
	for i := range out {
		out[i] = vocab[n%v]
		n /= v
	}
	return out
}

// synthPrompt builds a prompt of exactly n words: prefix (already prefixWords words), the
// salt, then random words. n is at least prefixWords+1; a salt longer than the room left
// is cut (from its end, keeping the sequence-number words first).
func synthPrompt(prefix string, prefixWords, n int, salt []string, r *rand.Rand) string {
	var b strings.Builder
	b.Grow(n * 7)
	b.WriteString(prefix)
	room := n - prefixWords
	for _, w := range salt {
		if room == 0 {
			break
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
		room--
	}
	words(&b, room, r)
	return b.String()
}

// estimateTokens approximates the token count of text without a tokenizer: about 4
// characters per token, the usual figure for English under BPE tokenizers (off by ±25% for
// code and other languages; the run reports server-side counts when the server sends them).
func estimateTokens(text string) int {
	n := (len(text) + 2) / 4
	if n < 1 {
		n = 1
	}
	return n
}

// joinWords joins head (may be empty) and ws with single spaces.
func joinWords(head string, ws []string) string {
	var b strings.Builder
	b.WriteString(head)
	for _, w := range ws {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	}
	return b.String()
}

// fitTokens returns head followed by the longest run ws[:k] (k ≥ minWords) whose text a
// real tokenizer counts at most target tokens, found by binary search (token counts grow
// with k). Used only with Options.Tokenizer; without one, one word is one token.
func fitTokens(tok Tokenizer, head string, ws []string, target, minWords int) string {
	lo, hi := minWords, len(ws)
	if lo > hi {
		lo = hi
	}
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if tok.Count(joinWords(head, ws[:mid])) <= target {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return joinWords(head, ws[:lo])
}

// randomWords returns n random vocabulary words.
func randomWords(n int, r *rand.Rand) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = vocab[r.IntN(len(vocab))]
	}
	return out
}
