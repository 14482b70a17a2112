package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/pel-ladder/pel/internal/scrub"
)

// ErrNotReady marks a target that is unreachable or not an OpenAI-compatible server.
var ErrNotReady = errors.New("target not ready")

// Readiness is what the pre-load check learned.
type Readiness struct {
	Via    string   // "/v1/models" or "/health"
	Models []string // ids from /v1/models, in the server's order
}

// CheckReady asks GET /v1/models (an OpenAI server lists its models there) and falls back
// to GET /health (vLLM, SGLang and TGI serve it) when the first is missing. It fails, with
// an error wrapping ErrNotReady, when the target cannot be reached, answers with something
// that is not an OpenAI API (an HTML page, a JSON without "data"), or refuses the key.
func CheckReady(ctx context.Context, hc *http.Client, target, apiKey string) (*Readiness, error) {
	if hc == nil {
		hc = DefaultHTTPClient()
	}
	hc = noRedirects(hc) // the key must not follow a redirect to another server
	shown := scrub.URL(BaseURL(target))
	// Messages may quote the server's answer; a server that echoes the refused key must not
	// get it printed.
	notReady := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrNotReady, redactKey(fmt.Sprintf(format, a...), apiKey))
	}
	base := BaseURL(target)
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return nil, notReady("target %q must start with http:// or https://", scrub.URL(target))
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	get := func(path string) (int, string, []byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, Endpoint(target, path), nil)
		if err != nil {
			return 0, "", nil, err
		}
		if apiKey != "" {
			req.Header.Set("Authorization", "Bearer "+apiKey)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, "", nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode >= 300 && resp.StatusCode <= 399 {
			return resp.StatusCode, "", nil, fmt.Errorf("HTTP %d redirect to %s (pel does not follow redirects: give the final URL as --target)",
				resp.StatusCode, orNone(scrub.URL(resp.Header.Get("Location"))))
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return resp.StatusCode, resp.Header.Get("Content-Type"), b, nil
	}
	code, ct, body, err := get("/v1/models")
	if err != nil && code != 0 {
		return nil, notReady("%s answered GET /v1/models with an %s", shown, err)
	}
	if err != nil {
		return nil, notReady("%s is not reachable: %s", shown, connMessage(err))
	}
	switch {
	case (code == http.StatusUnauthorized || code == http.StatusForbidden) && apiKey == "":
		return nil, notReady("%s wants an API key and none was sent (HTTP %d on /v1/models): the key's variable is unset or empty; set OPENAI_API_KEY, or name another variable with --api-key-env NAME", shown, code)
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return nil, notReady("%s refused the API key that was sent (HTTP %d on /v1/models): the key is wrong or has no access to this server; check the value of OPENAI_API_KEY (or of the variable --api-key-env names)", shown, code)
	case code == http.StatusOK:
		var list struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		if json.Unmarshal(body, &list) != nil || list.Data == nil {
			return nil, notReady("%s is not an OpenAI-compatible server: GET /v1/models returned %s", shown, describe(ct, body))
		}
		r := &Readiness{Via: "/v1/models"}
		for _, d := range list.Data {
			// A model id is sent back in every request and printed: keep it printable.
			r.Models = append(r.Models, oneLine(d.ID, 256))
		}
		return r, nil
	}
	hcode, hct, hbody, herr := get("/health")
	if herr == nil && hcode == http.StatusOK && !looksHTML(hbody) && !strings.Contains(hct, "html") {
		return &Readiness{Via: "/health"}, nil
	}
	hdesc := "no answer"
	if herr != nil && hcode != 0 {
		hdesc = "an " + herr.Error()
	} else if herr == nil {
		hdesc = fmt.Sprintf("HTTP %d (%s)", hcode, describe(hct, hbody))
	}
	return nil, notReady("%s is not an OpenAI-compatible server: GET /v1/models returned HTTP %d (%s), GET /health returned %s",
		shown, code, describe(ct, body), hdesc)
}

func describe(ct string, b []byte) string {
	if len(b) == 0 {
		return "an empty body"
	}
	return ErrorMessage(ct, b)
}
