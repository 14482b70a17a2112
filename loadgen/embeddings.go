package loadgen

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"

	"github.com/pel-ladder/pel/record"
)

// MaxEmbeddingsBody bounds one /v1/embeddings response: 2,048 inputs (OpenAI's batch
// limit) of 4,096-dimension float vectors written as JSON numbers are ~100 MiB; a larger
// body is cut and the call fails as incomplete. The body is read as a token stream, so pel
// holds one number at a time, never the vectors.
const MaxEmbeddingsBody = 128 << 20

// maxEmbeddingDims bounds one vector's dimension (the largest served models use 4,096-8,192).
const maxEmbeddingDims = 1 << 16

// Embeddings is what pel keeps of an /v1/embeddings response: how many vectors, their
// dimension and the usage block (https://platform.openai.com/docs/api-reference/embeddings/object:
// {"object":"list","data":[{"object":"embedding","index":0,"embedding":[...]}],
// "model":...,"usage":{"prompt_tokens":N,"total_tokens":N}}).
type Embeddings struct {
	N, Dims      int
	PromptTokens int
	HasUsage     bool
}

// errEmbeddingsError is returned (wrapped) when a 200 response carries an "error" object.
var errEmbeddingsError = errors.New("error in response")

// ParseEmbeddings reads an embeddings response and checks it answers a batch of want
// inputs: one vector per input (indices 0..want-1, each once), every vector the same
// non-zero dimension, as JSON numbers or as base64 little-endian float32 (encoding_format
// base64). It never holds more than one token of the body (see FuzzParseEmbeddings).
func ParseEmbeddings(r io.Reader, want int) (Embeddings, error) {
	var res Embeddings
	// A single value is bounded before encoding/json holds it whole (held.go).
	dec := json.NewDecoder(&tokenGuard{r: r, max: maxJSONToken})
	dec.UseNumber()
	if err := expectDelim(dec, '{'); err != nil {
		return res, err
	}
	seen := map[int]bool{}
	for dec.More() {
		key, err := stringToken(dec)
		if err != nil {
			return res, err
		}
		switch key {
		case "data":
			if err := parseData(dec, &res, seen, want); err != nil {
				return res, err
			}
		case "usage":
			var u struct {
				PromptTokens *int `json:"prompt_tokens"`
			}
			if err := dec.Decode(&u); err != nil {
				return res, fmt.Errorf("usage: %v", err)
			}
			if u.PromptTokens != nil {
				res.PromptTokens, res.HasUsage = *u.PromptTokens, true
			}
		case "error":
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return res, err
			}
			if present(raw) {
				return res, fmt.Errorf("%w: %s", errEmbeddingsError, errorField(raw))
			}
		default:
			if err := skipValue(dec); err != nil {
				return res, err
			}
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return res, err
	}
	switch {
	case res.N != want:
		return res, fmt.Errorf("%d vectors for %d inputs", res.N, want)
	case res.HasUsage && (res.PromptTokens < 0 || res.PromptTokens > record.MaxTokens):
		return res, fmt.Errorf("implausible usage: prompt_tokens %d", res.PromptTokens)
	}
	return res, nil
}

func parseData(dec *json.Decoder, res *Embeddings, seen map[int]bool, want int) error {
	if err := expectDelim(dec, '['); err != nil {
		return fmt.Errorf("data: %v", err)
	}
	for dec.More() {
		if err := expectDelim(dec, '{'); err != nil {
			return fmt.Errorf("data[%d]: %v", res.N, err)
		}
		idx, dims := -1, -1
		for dec.More() {
			key, err := stringToken(dec)
			if err != nil {
				return err
			}
			switch key {
			case "index":
				var n json.Number
				if err := dec.Decode(&n); err != nil {
					return fmt.Errorf("data[%d].index: %v", res.N, err)
				}
				v, err := n.Int64()
				if err != nil || v < 0 || v >= int64(want) {
					return fmt.Errorf("data[%d].index %s is not one of the %d inputs", res.N, n, want)
				}
				idx = int(v)
			case "embedding":
				d, err := vectorDims(dec)
				if err != nil {
					return fmt.Errorf("data[%d].embedding: %v", res.N, err)
				}
				dims = d
			default:
				if err := skipValue(dec); err != nil {
					return err
				}
			}
		}
		if _, err := dec.Token(); err != nil {
			return err
		}
		if dims <= 0 {
			return fmt.Errorf("data[%d]: no embedding", res.N)
		}
		if idx < 0 {
			idx = res.N // OpenAI always sends index; a server that does not keeps the order
		}
		if seen[idx] {
			return fmt.Errorf("data[%d]: index %d twice", res.N, idx)
		}
		seen[idx] = true
		if res.Dims != 0 && dims != res.Dims {
			return fmt.Errorf("data[%d]: %d dimensions, the first vector had %d", res.N, dims, res.Dims)
		}
		res.Dims = dims
		res.N++
		if res.N > want {
			return fmt.Errorf("more than %d vectors for %d inputs", want, want)
		}
	}
	_, err := dec.Token()
	return err
}

// vectorDims reads one embedding (an array of finite numbers, or a base64 string of
// float32s) and returns its dimension.
func vectorDims(dec *json.Decoder) (int, error) {
	tok, err := dec.Token()
	if err != nil {
		return 0, err
	}
	switch v := tok.(type) {
	case string:
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			return 0, fmt.Errorf("not base64: %v", err)
		}
		if len(b)%4 != 0 || len(b) == 0 || len(b)/4 > maxEmbeddingDims {
			return 0, fmt.Errorf("base64 of %d bytes is not a float32 vector of 1..%d", len(b), maxEmbeddingDims)
		}
		return len(b) / 4, nil
	case json.Delim:
		if v != '[' {
			return 0, fmt.Errorf("want an array of numbers or a base64 string, got %v", v)
		}
	default:
		return 0, fmt.Errorf("want an array of numbers or a base64 string, got %T", tok)
	}
	n := 0
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return 0, err
		}
		num, ok := tok.(json.Number)
		if !ok {
			return 0, fmt.Errorf("element %d is not a number", n)
		}
		if f, err := num.Float64(); err != nil || math.IsInf(f, 0) {
			return 0, fmt.Errorf("element %d is not a finite number", n)
		}
		n++
		if n > maxEmbeddingDims {
			return 0, fmt.Errorf("over %d dimensions", maxEmbeddingDims)
		}
	}
	if _, err := dec.Token(); err != nil {
		return 0, err
	}
	return n, nil
}

func expectDelim(dec *json.Decoder, d json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if got, ok := tok.(json.Delim); !ok || got != d {
		return fmt.Errorf("want %q, got %v", d, tok)
	}
	return nil
}

func stringToken(dec *json.Decoder) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", err
	}
	s, ok := tok.(string)
	if !ok {
		return "", fmt.Errorf("want a key, got %v", tok)
	}
	return s, nil
}

// skipValue skips one value token by token (an unknown key's value may be large).
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '{' || d == '[' {
				depth++
			} else {
				depth--
			}
		}
		if depth <= 0 {
			return nil
		}
	}
}

// embed performs one attempt of an embeddings call and fills rec like Do does: a completed
// call is StatusOK with PromptTokens from usage (TTFT and ITL do not exist: nothing streams).
func (c *Client) embed(taskCtx context.Context, s *StepCall, body []byte, rec *record.Record, traceparent string) StepOutcome {
	resetAttempt(rec)
	rec.SentPromptTokens = s.Request.PlannedPromptTokens
	resp, fail, done := c.send(taskCtx, c.embURL, acceptJSON, body, rec, traceparent)
	if resp == nil {
		return StepOutcome{}
	}
	defer done()
	cr := &capReader{r: resp.Body, left: MaxEmbeddingsBody}
	res, err := ParseEmbeddings(cr, len(s.Inputs))
	if err != nil {
		var ne net.Error
		switch {
		case errors.Is(err, errStreamTooLong):
			fail(record.StatusStreamError, record.ErrIncomplete, fmt.Sprintf("embeddings response over %d MiB (MaxEmbeddingsBody): cut", MaxEmbeddingsBody>>20))
		case errors.Is(err, errEmbeddingsError):
			fail(record.StatusStreamError, record.ErrStreamEvent, oneLine(err.Error(), 300))
		case errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &ne):
			fail(record.StatusStreamError, record.ErrIncomplete, "embeddings response broken: "+connMessage(err))
		default:
			fail(record.StatusInvalid, record.ErrInvalid, "embeddings response invalid: "+oneLine(err.Error(), 200))
		}
		return StepOutcome{}
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxAfterDone)) // so the connection can be reused
	rec.Status = record.StatusOK
	rec.PromptTokens, rec.TokenSource = s.Request.PromptTokens, record.TokensEstimate
	if res.HasUsage {
		rec.PromptTokens, rec.TokenSource = res.PromptTokens, record.TokensUsage
		if sent := s.Request.PlannedPromptTokens; sent > 0 && float64(res.PromptTokens) < PromptTruncatedRatio*float64(sent) {
			rec.AddFlag(record.FlagPromptTruncated)
			fail(record.StatusInvalid, record.ErrInvalid, fmt.Sprintf("prompt truncated (sent %d, server counted %d)", sent, res.PromptTokens))
		}
	}
	return StepOutcome{Dims: res.Dims}
}
