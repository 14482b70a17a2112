package k8s

import (
	"strings"
	"testing"
	"time"
)

// TestRefusesWhatAManifestMustNotCarry: every flag value is held to its grammar before it
// is printed; credentials are refused with the Secret named as the way.
func TestRefusesWhatAManifestMustNotCarry(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(j *Job)
		errHas string // "": printed
	}{
		{"the test job", func(j *Job) {}, ""},
		{"image with a digest", func(j *Job) { j.Image = "ghcr.io/pel-ladder/pel@sha256:" + strings.Repeat("ab", 32) }, ""},
		{"image with a port and tag", func(j *Job) { j.Image = "localhost:5000/team/pel:1.2-rc_3" }, ""},
		{"newline in target", func(j *Job) { j.Target = "http://x:8000\n---\nkind: ConfigMap" }, "no spaces or control characters"},
		{"newline in image", func(j *Job) { j.Image = "pel:v1\n  evil: true" }, "not an image reference"},
		{"space in image", func(j *Job) { j.Image = "pel v1" }, "not an image reference"},
		{"upper-case image path", func(j *Job) { j.Image = "Registry.example/PEL:v1" }, "not an image reference"},
		{"credentials in target", func(j *Job) { j.Target = "http://admin:pw@vllm:8000" }, "--api-key-secret"},
		{"token in metrics", func(j *Job) { j.Metrics = []string{"http://vllm:8000/metrics?token=s3cret"} }, "--api-key-secret"},
		{"ftp target", func(j *Job) { j.Target = "ftp://vllm" }, "want an http:// or https:// URL"},
		{"bad namespace", func(j *Job) { j.Namespace = "Bench\nx" }, "not a DNS-1123 label"},
		{"bad secret", func(j *Job) { j.APIKeySecret = "key; rm" }, "not a DNS-1123 subdomain"},
		{"bad storage", func(j *Job) { j.Storage = "10Gi\nx: y" }, "not a quantity"},
		{"start in the past", func(j *Job) { j.StartAt = j.Now.Add(-26 * 365 * 24 * time.Hour) }, "before now"},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := testJob()
			c.change(j)
			m, err := j.Manifests()
			switch {
			case c.errHas == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.errHas == "":
				decodeStrict(t, m)
			case err == nil || !strings.Contains(err.Error(), c.errHas):
				t.Fatalf("error %v, want one with %q", err, c.errHas)
			case strings.Contains(err.Error(), "pw@") || strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "\n"):
				t.Errorf("the error repeats what it refuses: %q", err)
			}
		})
	}
}
