package sim

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"strconv"
)

// maxEmbeddingInputs bounds one embeddings request's batch (OpenAI's limit).
const maxEmbeddingInputs = 2048

// embeddingsRequest is the OpenAI embeddings request (https://platform.openai.com/docs/api-reference/embeddings/create):
// input is a string, an array of strings, an array of token ids or an array of arrays of
// token ids.
type embeddingsRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
}

// parseEmbeddings validates an embeddings request and returns each input's token ids and
// the vector dimension; it never panics on any input (FuzzParseEmbeddingsRequest).
func parseEmbeddings(body []byte, servedModel string, maxModelLen, hidden int) (inputs [][]uint32, dims int, base64Out bool, aerr *apiError) {
	var req embeddingsRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, 0, false, badRequest("", "malformed JSON body: %v", err)
	}
	if req.Model != "" && req.Model != servedModel {
		return nil, 0, false, &apiError{Status: http.StatusNotFound, Type: "NotFoundError", Param: "model",
			Message: fmt.Sprintf("The model `%s` does not exist.", req.Model)}
	}
	switch req.EncodingFormat {
	case "", "float":
	case "base64":
		base64Out = true
	default:
		return nil, 0, false, badRequest("encoding_format", "encoding_format must be float or base64, got %q", req.EncodingFormat)
	}
	dims = hidden
	if req.Dimensions != nil {
		if *req.Dimensions < 1 || *req.Dimensions > hidden {
			return nil, 0, false, badRequest("dimensions", "dimensions must be 1..%d, got %d", hidden, *req.Dimensions)
		}
		dims = *req.Dimensions
	}
	var one string
	var many []string
	var ids []int64
	var idss [][]int64
	switch {
	case len(req.Input) == 0 || string(req.Input) == "null":
		return nil, 0, false, badRequest("input", "input is required")
	case json.Unmarshal(req.Input, &one) == nil:
		inputs = [][]uint32{Tokenize(one, nil)}
	case json.Unmarshal(req.Input, &many) == nil:
		for _, s := range many {
			inputs = append(inputs, Tokenize(s, nil))
		}
	case json.Unmarshal(req.Input, &ids) == nil:
		idss = [][]int64{ids}
	case json.Unmarshal(req.Input, &idss) == nil:
	default:
		return nil, 0, false, badRequest("input", "input must be a string, an array of strings, or token ids")
	}
	for _, x := range idss {
		t := make([]uint32, len(x))
		for i, id := range x {
			if id < 0 || id > 1<<31 {
				return nil, 0, false, badRequest("input", "token id %d out of range", id)
			}
			t[i] = uint32(id)
		}
		inputs = append(inputs, t)
	}
	if len(inputs) == 0 || len(inputs) > maxEmbeddingInputs {
		return nil, 0, false, badRequest("input", "input must hold 1..%d items, got %d", maxEmbeddingInputs, len(inputs))
	}
	for i, t := range inputs {
		switch {
		case len(t) == 0:
			return nil, 0, false, badRequest("input", "input[%d] is empty", i)
		case len(t) >= maxModelLen:
			return nil, 0, false, badRequest("input", "input[%d] has %d tokens; this model's maximum context length is %d", i, len(t), maxModelLen)
		}
	}
	return inputs, dims, base64Out, nil
}

// serveEmbeddings answers /v1/embeddings the way vLLM's pooling runner does: every input is
// one prefill-only sequence in the same engine, so an embeddings batch takes prefill
// compute and KV blocks like any prompt and competes with generation for the GPU (it ends
// when its prompt is computed: one sampled token, never streamed). A real vLLM needs a
// pooling model for this endpoint, usually its own server; pel sim serves both from one
// engine so the demo can show a retrieval call next to generation. Vectors are
// deterministic unit vectors derived from the input's tokens.
func (s *Server) serveEmbeddings(w http.ResponseWriter, r *http.Request) {
	id := s.requestID(r)
	w.Header().Set("X-Request-Id", id)
	body, aerr := s.readBody(w, r)
	if aerr != nil {
		writeAPIError(w, aerr)
		return
	}
	m, _ := LookupModel(s.sc.Engine.Model)
	inputs, dims, b64, aerr := parseEmbeddings(body, s.sc.Engine.ServedModelName, s.cfg.MaxModelLen, max(m.Hidden, 1))
	if aerr != nil {
		writeAPIError(w, aerr)
		return
	}
	tp := r.Header.Get("traceparent")
	streams := make([]*stream, len(inputs))
	total := 0
	for i, ids := range inputs {
		total += len(ids)
		seed := s.opts.Seed ^ s.reqSeq.Add(1)*0x2545F4914F6CDD1D
		rep := s.route()
		st := &stream{r: rep, notify: make(chan struct{}, 1), reqID: id}
		st.traceID, st.parentID, _ = parseTraceparent(tp)
		st.seq = &Seq{ID: seed, PromptTokens: len(ids), MaxTokens: 1, Target: 1, Sink: st}
		s.enqueue(st, ids)
		streams[i] = st
	}
	for _, st := range streams {
		for {
			_, finish, done := st.take(nil)
			if done {
				if finish == "abort" {
					writeAPIError(w, &apiError{Status: http.StatusInternalServerError, Type: "InternalServerError", Message: "request aborted"})
					return
				}
				break
			}
			if !s.wait(r.Context(), st) {
				for _, o := range streams {
					o.seq.Abort()
				}
				return
			}
		}
	}
	out := []byte(`{"object":"list","data":[`)
	for i, ids := range inputs {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"object":"embedding","index":`...)
		out = strconv.AppendInt(out, int64(i), 10)
		out = append(out, `,"embedding":`...)
		out = appendVector(out, ids, dims, b64)
		out = append(out, '}')
	}
	out = append(out, `],"model":`...)
	out = appendJSONString(out, s.sc.Engine.ServedModelName)
	out = append(out, `,"usage":{"prompt_tokens":`...)
	out = strconv.AppendInt(out, int64(total), 10)
	out = append(out, `,"total_tokens":`...)
	out = strconv.AppendInt(out, int64(total), 10)
	out = append(out, "}}\n"...)
	w.Header().Set("Content-Type", "application/json")
	w.Write(out)
}

// appendVector writes a deterministic unit vector for ids: as JSON numbers, or as base64 of
// little-endian float32s (encoding_format base64).
func appendVector(b []byte, ids []uint32, dims int, b64 bool) []byte {
	h := fnv.New64a()
	var buf [4]byte
	for _, id := range ids {
		binary.LittleEndian.PutUint32(buf[:], id)
		h.Write(buf[:])
	}
	rng := newRand(h.Sum64())
	v := make([]float64, dims)
	norm := 0.0
	for i := range v {
		v[i] = rng.NormFloat64()
		norm += v[i] * v[i]
	}
	norm = math.Sqrt(max(norm, 1e-12))
	if b64 {
		raw := make([]byte, 4*dims)
		for i, x := range v {
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(float32(x/norm)))
		}
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, raw)
		return append(b, '"')
	}
	b = append(b, '[')
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendFloat(b, x/norm, 'g', 7, 32)
	}
	return append(b, ']')
}
