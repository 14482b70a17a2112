package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCanaryUsage(t *testing.T) {
	tmp := t.TempDir()
	cf := filepath.Join(tmp, "c.yaml")
	os.WriteFile(cf, []byte(runContract), 0o600)
	plain := filepath.Join(tmp, "plain")
	os.Mkdir(plain, 0o700)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--target", "http://127.0.0.1:1", "--contract", cf, "--canary-share", "0.2"}, "need --canary URL"},
		{[]string{"run", "--target", "http://127.0.0.1:1", "--contract", cf, "--canary", "http://127.0.0.1:2", "--canary-share", "1.5"}, "--canary-share 1.5"},
		{[]string{"run", "--target", "http://127.0.0.1:1", "--contract", cf, "--canary", "http://127.0.0.1:2", "--rollback-from", plain}, "--rollback-from"},
		{[]string{"canary", "--prometheus", "http://127.0.0.1:1"}, "canary needs --prometheus URL, --baseline SELECTOR and --candidate SELECTOR"},
		{[]string{"canary", "--prometheus", "http://127.0.0.1:1", "--baseline", "a", "--candidate", "b", "--end", "yesterday"}, `--end "yesterday"`},
		{[]string{"compare", plain}, "not an interleaved canary run"},
	} {
		code, _, errs := runCLI(t, c.args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, errs, c.want)
		}
	}
}
