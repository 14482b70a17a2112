package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/pel-ladder/pel/record"
)

// Judge decides whether a finished task is accepted: it completed without
// error, passed every check of its task, and met every per-request (max) SLO bound of its
// task. It sets rec.Accepted and rec.Reasons; output is the generated text (not stored).
//
// Reasons are short and stable so they can be counted across runs:
//
//	"error: http 500", "error: timeout", "error: stream", "error: conn", "cancelled",
//	"error: finish_error", "error: aborted", "error: no_finish_reason", "check content_filter",
//	"invalid: prompt truncated", "invalid: no output", "invalid: implausible usage",
//	"unknown task", "check regex" (or "check NAME" for a named check),
//	"slo ttft max 2s", "slo itl max 50ms", "slo tpot max 40ms", "slo e2e max 30s".
//
// A failed task gets only its error reason: its output and timings are not meaningful.
// Percentile bounds are not judged here: they hold over many tasks (see Objectives).
func (c *Contract) Judge(rec *record.Record, output string) {
	var reasons []string
	if r := errorReason(rec); r != "" {
		reasons = append(reasons, r)
	} else if t := c.Task(rec.Task); t == nil {
		reasons = append(reasons, "unknown task")
	} else {
		if r := filterReason(rec); r != "" {
			reasons = append(reasons, r)
		}
		for i := range t.Checks {
			if ch := &t.Checks[i]; !ch.Pass(output, rec.OutputTokens) {
				reasons = append(reasons, "check "+ch.Label())
			}
		}
		reasons = append(reasons, sloReasons(c.ObjectivesFor(rec.Task), rec)...)
	}
	rec.Accepted = len(reasons) == 0
	rec.Reasons = reasons
}

func errorReason(rec *record.Record) string {
	if r := classReason(rec); r != "" {
		return r
	}
	switch rec.Status {
	case record.StatusOK:
		return ""
	case record.StatusHTTPError:
		return fmt.Sprintf("error: http %d", rec.HTTPStatus)
	case record.StatusTimeout:
		return "error: timeout"
	case record.StatusStreamError:
		return "error: stream"
	case record.StatusConnError:
		return "error: conn"
	case record.StatusCancelled:
		return "cancelled"
	case record.StatusInvalid:
		return rec.InvalidReason()
	case "":
		return "error: no status"
	}
	return "error: " + rec.Status
}

// sloReasons lists the per-request objectives in objs that rec exceeds, as reasons.
func sloReasons(objs []Objective, rec *record.Record) []string {
	var out []string
	for _, o := range objs {
		if o.Exceeded(rec) {
			out = append(out, o.Reason())
		}
	}
	return out
}

// Label is the check's name in rejection reasons: its Name, else its Type.
func (ch *Check) Label() string {
	if ch.Name != "" {
		return ch.Name
	}
	return ch.Type
}

// Pass reports whether output (with outputTokens generated tokens) passes the check.
func (ch *Check) Pass(output string, outputTokens int) bool {
	switch ch.Type {
	case CheckRegex:
		return ch.re != nil && ch.re.MatchString(output)
	case CheckContains:
		return strings.Contains(output, ch.Text)
	case CheckJSON:
		return json.Valid([]byte(strings.TrimSpace(output)))
	case CheckJSONSchema:
		if ch.schema == nil {
			return false
		}
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(output)))
		return err == nil && ch.schema.Validate(v) == nil
	case CheckMinTokens:
		return outputTokens >= ch.Value
	case CheckMaxTokens:
		return outputTokens <= ch.Value
	}
	return false
}

// refuseLoader keeps schemas self-contained: a contract's $ref must not read local files or
// the network, or the same contract could judge differently on two machines.
type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external $ref %q not allowed: inline the schema", url)
}

// compileSchema compiles a JSON Schema document. Draft 2020-12 is the default; a "$schema"
// key selects another draft. Formats are annotations only (the spec's default).
func compileSchema(doc any) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(refuseLoader{})
	const loc = "contract:///check-schema.json"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, err
	}
	return c.Compile(loc)
}
