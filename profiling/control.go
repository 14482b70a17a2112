package profiling

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"time"
	"unicode"

	"github.com/pel-ladder/pel/contract"
	"github.com/pel-ladder/pel/internal/scrub"
)

// Bounds on what a control may take and answer.
const (
	// StartTimeout bounds a start call: the engine arms its profiler and answers.
	StartTimeout = 30 * time.Second
	// StopTimeout bounds a stop call. vLLM answers /stop_profile only once its workers
	// have written their traces, which on a large model takes minutes (vLLM's profiling
	// guide raises VLLM_RPC_TIMEOUT to 30 minutes for it); pel waits this long, then says
	// the profiler was not known to stop.
	StopTimeout = 10 * time.Minute
	// maxAnswer bounds the bytes read from an answer (an error message needs no more).
	maxAnswer = 64 << 10
	// maxShown bounds the bytes of an answer quoted in an error.
	maxShown = 300
)

// Control starts and stops an engine's profiler.
type Control interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// NewControl builds the control a profile asks for. base is the target's base URL (no
// /v1), key the API key sent as a bearer token (never shown), hc the HTTP client.
func NewControl(p contract.Profile, base, key string, hc *http.Client) (Control, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	switch p.Control {
	case contract.ProfileCommand:
		return &commandControl{start: p.Start, stop: p.Stop, key: key}, nil
	case contract.ProfileSGLang:
		// SGLang's ProfileReqInput: every field optional; output_dir is where its workers
		// write (default SGLANG_TORCH_PROFILER_DIR, else /tmp). pel names the directory it
		// reads the trace from when the contract gives one.
		body := []byte("{}")
		if p.Trace != "" && !strings.HasSuffix(p.Trace, ".json") && !strings.HasSuffix(p.Trace, ".gz") {
			body = fmt.Appendf(nil, `{"output_dir": %q}`, p.Trace)
		}
		return &httpControl{base: strings.TrimRight(base, "/"), key: key, hc: hc, body: body}, nil
	}
	return &httpControl{base: strings.TrimRight(base, "/"), key: key, hc: hc}, nil
}

// httpControl is vLLM's and SGLang's: POST /start_profile and POST /stop_profile on the
// serving port. vLLM serves them only when started with a profiler (VLLM_TORCH_PROFILER_DIR,
// or --profiler-config with profiler torch|cuda); otherwise they answer 404.
type httpControl struct {
	base string
	key  string
	hc   *http.Client
	body []byte // nil: no body (vLLM takes none)
}

func (c *httpControl) Start(ctx context.Context) error { return c.call(ctx, "/start_profile") }
func (c *httpControl) Stop(ctx context.Context) error  { return c.call(ctx, "/stop_profile") }

func (c *httpControl) call(ctx context.Context, path string) error {
	u := c.base + path
	var body io.Reader
	if c.body != nil {
		body = bytes.NewReader(c.body)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, body)
	if err != nil {
		return fmt.Errorf("POST %s: %v", scrub.URL(u), err)
	}
	if c.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s: %s", scrub.URL(u), scrub.Secret(err.Error(), c.key))
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if resp.StatusCode/100 != 2 {
		why := ""
		if resp.StatusCode == http.StatusNotFound {
			why = " (vLLM serves it only when started with VLLM_TORCH_PROFILER_DIR or --profiler-config)"
		}
		return refused{fmt.Errorf("POST %s: HTTP %d%s: %s", scrub.URL(u), resp.StatusCode, why, shown(b, c.key))}
	}
	return nil
}

// commandControl runs a user command for each call (argv, no shell), bounded in time by
// the call's context; its output is read bounded and quoted, without the API key, when it
// fails.
type commandControl struct {
	start, stop []string
	key         string
}

func (c *commandControl) Start(ctx context.Context) error { return runArgv(ctx, c.start, c.key) }
func (c *commandControl) Stop(ctx context.Context) error  { return runArgv(ctx, c.stop, c.key) }

func runArgv(ctx context.Context, argv []string, key string) error {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	out := &tailBuffer{max: maxAnswer}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 2 * time.Second // a child holding the pipes open cannot hold pel
	err := cmd.Run()
	if err == nil {
		return nil
	}
	if ctx.Err() != nil && !errors.Is(err, exec.ErrNotFound) {
		err = fmt.Errorf("%v (%v)", err, context.Cause(ctx))
	}
	var exit *exec.ExitError
	definite := errors.As(err, &exit) && ctx.Err() == nil
	msg := fmt.Sprintf("command %s: %v", shown([]byte(argv[0]), key), err)
	if t := shown(out.Bytes(), key); t != "" {
		msg += ": " + t
	}
	if definite || errors.Is(err, exec.ErrNotFound) {
		return refused{errors.New(msg)}
	}
	return errors.New(msg)
}

// refused is a control's definite answer that it did not act (an HTTP error status, a
// command that ran and failed): unlike a timeout, it leaves no profiler possibly running.
type refused struct{ error }

func (r refused) Unwrap() error { return r.error }

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) Bytes() []byte { return t.b }

// shown is an answer as an error quotes it: credentials removed, control characters
// replaced, at most maxShown bytes.
func shown(b []byte, key string) string {
	s := scrub.Secret(strings.TrimSpace(string(b)), key)
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return ' '
		}
		return r
	}, s)
	if len(s) > maxShown {
		cut := maxShown
		for cut > 0 && !utf8Start(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
