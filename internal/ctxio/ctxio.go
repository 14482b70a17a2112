// Package ctxio holds the reader that ends once a context does: a copy or a scan of a large
// file then stops between two reads on Ctrl-C, where nothing else would look at the context.
package ctxio

import (
	"context"
	"io"
)

// Reader is r whose reads fail with ctx's error once ctx is done. A read already under way
// is not cut (a regular file's read returns within one buffer), so a stop lands within one
// buffer of data.
func Reader(ctx context.Context, r io.Reader) io.Reader { return reader{ctx, r} }

type reader struct {
	ctx context.Context
	r   io.Reader
}

func (c reader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
