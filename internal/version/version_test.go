package version

import "testing"

func TestString(t *testing.T) {
	for _, tc := range []struct {
		in   Info
		want string
	}{
		{Info{Version: "v0.4.0"}, "v0.4.0"},
		{Info{Version: "(devel)", Commit: "1a2b3c4d5e6f7a8b9c0d", Modified: true}, "(devel) commit 1a2b3c4d5e6f (modified)"},
		{Info{Version: "(devel)", Commit: "abc"}, "(devel) commit abc"},
	} {
		if got := tc.in.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.in, got, tc.want)
		}
	}
	if Read().Version == "" {
		t.Error("Read gives no version")
	}
}
