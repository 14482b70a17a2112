// Package golden is the one golden-file helper of pel's tests: it compares a test's output
// with a file under testdata/, and `go test ./PKG -update` rewrites the files instead, so a
// deliberate change of output is one command and a reviewed diff.
//
// The -update flag is registered here, once, for every test binary that imports the
// package; a test package must not declare its own.
package golden

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ instead of comparing with them")

// Update reports whether the test binary runs with -update.
func Update() bool { return *update }

// maxShown is the size of output a mismatch prints whole: enough for a text report, short
// enough that an HTML page or a trace's JSON prints only its first differing line.
const maxShown = 4 << 10

// Check compares got with the golden file at path (relative to the package directory, as
// tests run there). Under -update it writes got to path instead. A missing or unreadable
// file ends the test; a difference is an error that names the first differing line. It
// reports whether got matches (or was written), for callers whose next steps read the file.
func Check(t testing.TB, path string, got []byte) bool {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return true
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if bytes.Equal(got, want) {
		return true
	}
	msg := fmt.Sprintf("%s differs from its golden file (go test -update rewrites it; review the diff):\n%s", path, FirstDiff(string(want), string(got)))
	if len(got) <= maxShown {
		msg += "\n--- got\n" + string(got)
	}
	t.Error(msg)
	return false
}

// FirstDiff names the first line where want and got differ, with both versions of it.
func FirstDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("line %d:\nwant %q\ngot  %q", i+1, w, g)
		}
	}
	return ""
}
