package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pel-ladder/pel/demo"
	"github.com/pel-ladder/pel/evidence"
	"github.com/pel-ladder/pel/internal/badinput"
	"github.com/pel-ladder/pel/report"
	"github.com/pel-ladder/pel/sim"
	"github.com/pel-ladder/pel/verify"
)

func init() { subcommands = append(subcommands, newDemoCmd) }

func newDemoCmd(a *app) *cobra.Command {
	var o demo.Options
	var asJSON, doVerify bool
	var verifyChange string
	c := &cobra.Command{
		Use:   "demo",
		Short: "Run the ladder end to end against the built-in simulated LLM server",
		Long: fmt.Sprintf(`demo starts pel's simulated engine on 127.0.0.1 with a scenario (a GPU, a model, serving
knobs and one injected fault), drives the scenario's workload contract against it while
sampling its /metrics and its virtual GPU's DCGM page (and capturing a profiler trace when the
scenario needs one), diagnoses the evidence from the outside, prints the report and writes the
run directory (evidence.json, report.html, requests.jsonl, metrics.jsonl, contract.yaml).

Scenarios: %s (default %s).
--no-metrics / --no-dcgm remove an evidence source to show how the diagnosis degrades.`,
			strings.Join(sim.Scenarios(), ", "), demo.DefaultScenario),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			// The scenario is checked before anything is said of where the demo writes.
			if _, err := sim.LoadScenario(cmp.Or(o.Scenario, demo.DefaultScenario)); err != nil {
				return usageError(err)
			}
			dir, err := demoDir(a.stderr, o.OutDir)
			if err != nil {
				return failError(err)
			}
			o.OutDir = dir
			if !asJSON {
				o.Progress = a.stderr
				o.IsTTY = isTerminal(a.stderr)
			}
			if doVerify {
				return runVerify(a, o, evidence.Action(verifyChange), asJSON)
			}
			res, err := demo.Run(a.ctx, o)
			if err != nil {
				if errors.Is(err, badinput.ErrBadInput) {
					return usageError(err)
				}
				return failError(err)
			}
			if asJSON {
				return report.JSON(a.stdout, res.Evidence)
			}
			return report.Short(a.stdout, res.Evidence, res.Dir)
		},
	}
	c.Flags().StringVar(&o.Scenario, "scenario", "", "scenario `NAME` or scenario file (default "+demo.DefaultScenario+")")
	c.Flags().StringVarP(&o.OutDir, "out", "o", "", "directory to write (absent or empty; default <user cache dir>/pel/demo-<UTC time>)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the evidence as JSON instead of the text report")
	c.Flags().BoolVar(&o.NoMetrics, "no-metrics", false, "do not sample the engine's /metrics")
	c.Flags().BoolVar(&o.NoDCGM, "no-dcgm", false, "do not sample the virtual GPU's DCGM page")
	c.Flags().BoolVar(&o.NoTrace, "no-trace", false, "do not capture a profiler trace even when the scenario uses one")
	c.Flags().BoolVar(&doVerify, "verify", false, "after the diagnosis, apply the owner finding's predicted change to the simulated engine, rerun the same contract into DIR/verify and check the prediction (held, failed, not testable)")
	c.Flags().StringVar(&verifyChange, "verify-change", "", "with --verify, apply this `ACTION` instead of the predicted one (e.g. chunk_prefill) to see a wrong change caught")
	return c
}

// runVerify is pel demo --verify: exit 0 when the prediction held, 1 when it failed or could
// not be tested.
func runVerify(a *app, o demo.Options, override evidence.Action, asJSON bool) error {
	v, err := demo.Verify(a.ctx, o, override)
	if err != nil {
		if errors.Is(err, badinput.ErrBadInput) {
			return usageError(err)
		}
		return failError(err)
	}
	r := report.Verified{Verdict: v.Base.Evidence.Verdict, Applied: v.Applied, Skipped: v.Skipped, Check: checkOf(v), BaseDir: v.Base.Dir}
	if v.Finding != nil {
		r.Prediction = v.Finding.Prediction
	}
	if v.Candidate != nil {
		r.CandidateDir = v.Candidate.Dir
	}
	if asJSON {
		return report.VerifiedJSON(a.stdout, r)
	}
	if err := report.VerifiedText(a.stdout, r); err != nil {
		return failError(err)
	}
	if v.Skipped != "" {
		return nil
	}
	if v.Check.Outcome != verify.Held {
		return failError(fmt.Errorf("the prediction did not hold: %s", v.Check.Reason))
	}
	return nil
}

func checkOf(v *demo.Verification) *verify.Result {
	if v.Candidate == nil {
		return nil
	}
	return &v.Check
}

// demoDir is -o, or a new directory under the user's cache directory (os.UserCacheDir:
// $XDG_CACHE_HOME or ~/.cache on Linux): a demo run is pel's own example, and written into
// the current directory it lands in the user's checkout as untracked files. Where it goes is
// said on w before the run starts.
func demoDir(w io.Writer, o string) (string, error) {
	if o != "" {
		return o, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no -o given and no user cache directory (%v): give -o DIR", err)
	}
	d := filepath.Join(cache, "pel", "demo-"+time.Now().UTC().Format("20060102-150405"))
	if err := os.MkdirAll(filepath.Dir(d), 0o700); err != nil {
		return "", fmt.Errorf("creating %s: %w", filepath.Dir(d), err)
	}
	report.DemoDir(w, d)
	return d, nil
}
