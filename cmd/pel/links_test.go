package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pel-ladder/pel/contract"
)

// contract init writes past a link planted at FILE.tmp and refuses a link at FILE itself,
// --force or not; the link's target stays as it was.
func TestContractInitPlantedLinks(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("theirs"), 0o644)
	file := filepath.Join(dir, "c.yaml")
	os.Symlink(victim, file+".tmp")
	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"contract", "init", file}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(file); !bytes.Equal(b, contract.Example()) {
		t.Error("init did not write the example")
	}
	if st, _ := os.Stat(file); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644 (an example to share)", st.Mode().Perm())
	}
	linked := filepath.Join(dir, "l.yaml")
	os.Symlink(victim, linked)
	for _, args := range [][]string{{"contract", "init", linked}, {"contract", "init", "--force", linked}} {
		err := run(context.Background(), args, &out, &errb)
		if code := exitCode(err, &errb); code != 2 || err == nil || !strings.Contains(err.Error(), "symbolic link") && !strings.Contains(err.Error(), "exists") {
			t.Errorf("%v: exit %d, %v", args, code, err)
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "theirs" {
		t.Errorf("the link's target was written: %.40q", b)
	}
}
