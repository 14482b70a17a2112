package scrape

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/internal/golden"
)

// TestFixtures: every real /metrics capture either parses, and its normalized reading
// is pinned by a golden file, or fails with an error naming the file and line.
func TestFixtures(t *testing.T) {
	files, err := filepath.Glob("testdata/fixtures/*.prom")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".prom")
		t.Run(name, func(t *testing.T) {
			var got bytes.Buffer
			fams, err := ParseFile(f)
			if err != nil {
				got.WriteString("error: " + err.Error() + "\n")
			} else {
				kind := KindEngine
				if strings.HasPrefix(name, "dcgm") {
					kind = KindDCGM
				}
				snap, err := Snapshot(fams, kind, "")
				if err != nil {
					t.Fatal(err)
				}
				got.WriteString(snap)
			}
			golden.Check(t, filepath.Join("testdata", name+".golden"), got.Bytes())
		})
	}
}

// TestFixtureErrorNamesFileAndLine: the DCGM README sample has literal "..." lines.
func TestFixtureErrorNamesFileAndLine(t *testing.T) {
	_, err := ParseFile("testdata/fixtures/dcgm-exporter-readme.prom")
	if err == nil {
		t.Fatal("dcgm-exporter-readme.prom parsed; it has literal ... lines")
	}
	if !strings.HasPrefix(err.Error(), "dcgm-exporter-readme.prom:7: ") {
		t.Errorf("error %q does not name file and line 7", err)
	}
}
