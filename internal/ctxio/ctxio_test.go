package ctxio

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestReader(t *testing.T) {
	for _, c := range []struct {
		name     string
		cancelAt int // cancel once this many bytes are read; -1 never
		want     error
		wantN    int
	}{
		{"never cancelled", -1, nil, 10},
		{"cancelled before the first read", 0, context.Canceled, 0},
		{"cancelled after four bytes", 4, context.Canceled, 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			r := Reader(ctx, strings.NewReader("0123456789"))
			var got []byte
			buf := make([]byte, 2)
			var err error
			for {
				if len(got) == c.cancelAt {
					cancel()
				}
				var n int
				n, err = r.Read(buf)
				got = append(got, buf[:n]...)
				if err != nil {
					break
				}
			}
			if errors.Is(err, io.EOF) {
				err = nil
			}
			if !errors.Is(err, c.want) || len(got) != c.wantN {
				t.Errorf("read %d bytes, error %v; want %d bytes, error %v", len(got), err, c.wantN, c.want)
			}
		})
	}
}
