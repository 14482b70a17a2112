package scrape

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Bounds on one Prometheus API answer. Go's transport inflates a gzip answer transparently,
// so a 0.5 MiB body can become 500 MiB; and an answer of 2 M one-point series decoded
// whole would need 2.2 GB. The answer is decoded as it streams, one series at a time, and both
// bounds are checked on the way.
const (
	// MaxPromBody bounds an answer after decompression: 64 MiB is ~2.5 M points at ~25
	// bytes a point, hundreds of times a canary window of a hundred series at pel's steps.
	MaxPromBody = 64 << 20
	// MaxPromSeries bounds the series of one answer: maxStoreSeries, what a run keeps of
	// one endpoint.
	MaxPromSeries = maxStoreSeries
)

var errPromBody = fmt.Errorf("answer over %d MiB after decompression (MaxPromBody): not read", MaxPromBody>>20)

// promBodyReader fails with errPromBody past MaxPromBody bytes and keeps the first bytes
// read (for an error quoting an answer that is not JSON).
type promBodyReader struct {
	r    io.Reader
	left int64
	head []byte
}

func (p *promBodyReader) Read(b []byte) (int, error) {
	if p.left <= 0 {
		return 0, errPromBody
	}
	if int64(len(b)) > p.left {
		b = b[:p.left]
	}
	n, err := p.r.Read(b)
	p.left -= int64(n)
	if len(p.head) < 200 {
		p.head = append(p.head, b[:min(n, 200-len(p.head))]...)
	}
	return n, err
}

// decodePromAnswer reads a Prometheus API answer ({"status", "data": {"resultType",
// "result": [...]}, "errorType", "error"}) one series at a time.
func decodePromAnswer(r io.Reader) (pr promResponse, d promData, err error) {
	dec := json.NewDecoder(r)
	if err := promDelim(dec, '{'); err != nil {
		return pr, d, err
	}
	for dec.More() {
		key, err := promKey(dec)
		if err != nil {
			return pr, d, err
		}
		switch key {
		case "status":
			err = dec.Decode(&pr.Status)
		case "errorType":
			err = dec.Decode(&pr.ErrorType)
		case "error":
			err = dec.Decode(&pr.Error)
		case "data":
			err = decodePromData(dec, &d)
		default:
			var skip json.RawMessage
			err = dec.Decode(&skip)
		}
		if err != nil {
			return pr, d, err
		}
	}
	return pr, d, nil
}

func decodePromData(dec *json.Decoder, d *promData) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok == nil { // "data": null (an error answer)
		return nil
	}
	if tok != json.Delim('{') {
		return fmt.Errorf("data: want an object, got %v", tok)
	}
	for dec.More() {
		key, err := promKey(dec)
		if err != nil {
			return err
		}
		switch key {
		case "resultType":
			err = dec.Decode(&d.ResultType)
		case "result":
			err = decodePromResult(dec, d)
		default:
			var skip json.RawMessage
			err = dec.Decode(&skip)
		}
		if err != nil {
			return fmt.Errorf("data.%s: %w", key, err)
		}
	}
	_, err = dec.Token()
	return err
}

func decodePromResult(dec *json.Decoder, d *promData) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != json.Delim('[') {
		// A scalar or string result: pel asks for none; skip it.
		if delim, ok := tok.(json.Delim); ok && delim == '{' {
			return errors.New("want an array")
		}
		return nil
	}
	for dec.More() {
		if len(d.Result) >= MaxPromSeries {
			return fmt.Errorf("over %d series (MaxPromSeries): narrow the selector", MaxPromSeries)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		var s promSeries
		if len(raw) > 0 && raw[0] == '{' {
			if err := json.Unmarshal(raw, &s); err != nil {
				return err
			}
			d.Result = append(d.Result, s)
		}
	}
	_, err = dec.Token()
	return err
}

func promDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != want {
		return fmt.Errorf("want %q, got %v", want, tok)
	}
	return nil
}

func promKey(dec *json.Decoder) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", err
	}
	k, ok := tok.(string)
	if !ok {
		return "", fmt.Errorf("want a key, got %v", tok)
	}
	return k, nil
}
