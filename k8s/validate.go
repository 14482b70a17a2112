package k8s

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/pel-ladder/pel/internal/scrub"
)

// Every value of a manifest comes from the command line. The YAML encoder escapes what it
// writes, but a value is still checked against its own grammar first: a URL with a newline
// or credentials, an image reference with a space, a namespace that is no DNS label are
// refused (exit 2) rather than printed into manifests someone applies to a cluster.

// imageRE is an OCI image reference ([registry[:port]/]path[:tag][@digest]) as the
// distribution project's reference grammar defines it: lower-case path components joined by
// ".", "_", "__" or dashes, a tag of at most 128 word characters, dots and dashes, and a
// digest of an algorithm and hex.
var imageRE = regexp.MustCompile(`^(?:(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\.(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?))*(?::[0-9]+)?/)?` +
	`[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*` +
	`(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$`)

// dnsLabelRE is an RFC 1123 label (namespaces, Secret names, storage classes: Kubernetes
// allows subdomains for the last two; a label is a subdomain).
var dnsLabelRE = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$`)

// dnsSubdomainRE is an RFC 1123 subdomain (Secret and StorageClass names).
var dnsSubdomainRE = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*$`)

// quantityRE is a Kubernetes resource quantity such as 10Gi or 500M.
var quantityRE = regexp.MustCompile(`^[0-9]+(?:\.[0-9]+)?(?:Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$`)

// checkURL checks a URL flag: http or https, a host, nothing a manifest must not carry
// (control characters, spaces) and no credentials, neither user:password nor a secret in
// the query (those go in a Secret: --api-key-secret).
func checkURL(flag, v string) error {
	if strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f || r == ' ' }) {
		return fmt.Errorf("%s %q: a URL holds no spaces or control characters", flag, scrub.Text(scrub.URL(v)))
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return fmt.Errorf("%s %q: want an http:// or https:// URL with a host", flag, scrub.URL(v))
	}
	if u.User != nil {
		return fmt.Errorf("%s %s: credentials in a URL would be printed into the manifests; give the API key as a Secret (--api-key-secret NAME) instead", flag, scrub.URL(v))
	}
	if scrub.URL(v) != v {
		return fmt.Errorf("%s %s: a secret in the query would be printed into the manifests; give the API key as a Secret (--api-key-secret NAME) instead", flag, scrub.URL(v))
	}
	return nil
}

// validate checks every value Manifests prints.
func (j *Job) validate() error {
	if err := checkURL("--target", j.Target); err != nil {
		return err
	}
	for _, m := range j.Metrics {
		if err := checkURL("--metrics", m); err != nil {
			return err
		}
	}
	if len(j.Image) > 255 || !imageRE.MatchString(j.Image) {
		return fmt.Errorf("--image %q: not an image reference (REGISTRY/NAME:TAG or NAME@sha256:DIGEST)", scrub.Text(j.Image))
	}
	if j.Namespace != "" && !dnsLabelRE.MatchString(j.Namespace) {
		return fmt.Errorf("--namespace %q: not a DNS-1123 label (lower-case letters, digits and dashes, at most 63)", scrub.Text(j.Namespace))
	}
	for _, v := range []struct{ flag, v string }{{"--api-key-secret", j.APIKeySecret}, {"--storage-class", j.StorageClass}} {
		if v.v != "" && (len(v.v) > 253 || !dnsSubdomainRE.MatchString(v.v)) {
			return fmt.Errorf("%s %q: not a DNS-1123 subdomain (a Kubernetes object name)", v.flag, scrub.Text(v.v))
		}
	}
	if j.Storage != "" && !quantityRE.MatchString(j.Storage) {
		return fmt.Errorf("--storage %q: not a quantity such as 10Gi", scrub.Text(j.Storage))
	}
	if !j.Now.IsZero() && j.StartAt.Before(j.Now) {
		return fmt.Errorf("--start-at %s is before now (%s): the shards would start late and the merge would not wait", j.StartAt.UTC().Format("2006-01-02T15:04:05Z"), j.Now.UTC().Format("2006-01-02T15:04:05Z"))
	}
	return nil
}
