package badinput

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestKinds(t *testing.T) {
	other := errors.New("other")
	for _, tc := range []struct {
		name     string
		err      error
		bad      bool
		canceled bool
		msg      string
	}{
		{"errorf", Errorf("f.yaml:3: rate: %w", other), true, false, "f.yaml:3: rate: other"},
		{"wrap", Wrap(other), true, false, "other"},
		{"wrap nil", Wrap(nil), false, false, ""},
		{"wrapped further", fmt.Errorf("point c1: %w", Errorf("dead target")), true, false, "point c1: dead target"},
		{"hidden", Hide(fmt.Errorf("point c2: %w", Errorf("dead target"))), false, false, "point c2: dead target"},
		{"hidden keeps other kinds", Hide(fmt.Errorf("%w; %w", Errorf("x"), context.Canceled)), false, true, "x; context canceled"},
		{"hide passes others", Hide(context.Canceled), false, true, "context canceled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := errors.Is(tc.err, ErrBadInput); got != tc.bad {
				t.Errorf("bad input %v, want %v", got, tc.bad)
			}
			if got := errors.Is(tc.err, context.Canceled); got != tc.canceled {
				t.Errorf("canceled %v, want %v", got, tc.canceled)
			}
			if tc.err != nil && tc.err.Error() != tc.msg {
				t.Errorf("message %q, want %q", tc.err.Error(), tc.msg)
			}
			if tc.err == nil && tc.msg != "" {
				t.Errorf("nil error, want %q", tc.msg)
			}
		})
	}
}
