package main

import (
	"net"
	"net/url"

	"github.com/pel-ladder/pel/report"
	"github.com/pel-ladder/pel/sim"
	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newSimCmd) }

func newSimCmd(a *app) *cobra.Command {
	var (
		scenario, addr, dcgmAddr string
		otlpEndpoint             string
		speed                    float64
		seed                     uint64
		list, showContract       bool
		profileDir               string
		profileSlowdown          float64
	)
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Run the simulated LLM engine (OpenAI API, vLLM /metrics, DCGM page, Kineto traces)",
		Long: `pel sim serves a simulated continuous-batching LLM engine (vLLM V1 as the reference) on
loopback: /v1/chat/completions, /v1/completions, /v1/models, /health, /metrics (vLLM names),
/debug/trace?seconds=S (a Kineto trace of the virtual GPU), with --dcgm-addr a
DCGM-exporter page, with --otlp-endpoint vLLM-shaped llm_request spans, and with
--profile-dir DIR vLLM's profiler control (POST /start_profile, POST /stop_profile): while
profiling, steps take --profile-slowdown times as long and the stop writes a Kineto trace
into DIR (see docs/profile.md). Each scenario
injects one fault whose owner layer is known:

  pel sim --list
  pel sim --scenario kv-thrash --addr 127.0.0.1:8000 --dcgm-addr 127.0.0.1:9400
  pel sim --scenario kv-thrash --contract     # print the workload contract that exposes it`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if list {
				if err := report.Scenarios(a.stdout, sim.Scenarios(), sim.LoadScenario); err != nil {
					return failError(err)
				}
				return nil
			}
			s, err := sim.LoadScenario(scenario)
			if err != nil {
				return usageError(err)
			}
			if showContract {
				a.stdout.Write(s.Contract)
				return nil
			}
			if !(speed > 0) {
				return usageErrorf("--speed %g: must be > 0", speed)
			}
			if err := checkLoopback(addr, "--addr"); err != nil {
				return err
			}
			if dcgmAddr != "" {
				if err := checkLoopback(dcgmAddr, "--dcgm-addr"); err != nil {
					return err
				}
			}
			if otlpEndpoint != "" {
				u, err := url.Parse(otlpEndpoint)
				if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					return usageErrorf("--otlp-endpoint %q: want a URL like http://127.0.0.1:4318/v1/traces", otlpEndpoint)
				}
			}
			srv, err := sim.NewServer(s, sim.Options{Speed: speed, Seed: seed, OTLPEndpoint: otlpEndpoint, ProfileDir: profileDir, ProfileSlowdown: profileSlowdown})
			if err != nil {
				return usageError(err)
			}
			if err := srv.Start(addr, dcgmAddr); err != nil {
				return failError(err)
			}
			defer srv.Close()
			report.SimServing(a.stderr, s.Name, s.OwnerLayer, s.Engine.ServedModelName, srv.URL(), srv.KVCapacityTokens(), speed, srv.DCGMURL())
			<-a.ctx.Done()
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&scenario, "scenario", "healthy", "embedded scenario name (see --list) or a scenario YAML file")
	f.StringVar(&addr, "addr", "127.0.0.1:8000", "listen address for the OpenAI API and /metrics")
	f.StringVar(&dcgmAddr, "dcgm-addr", "", "listen address for a DCGM-exporter page (off when empty)")
	f.Float64Var(&speed, "speed", 1, "virtual seconds per wall second (compresses all timing consistently)")
	f.Uint64Var(&seed, "seed", 1, "random seed (speculative acceptance, EOS lengths)")
	f.StringVar(&otlpEndpoint, "otlp-endpoint", "", "send one vLLM-shaped llm_request span per request as OTLP/HTTP JSON to this URL")
	f.StringVar(&profileDir, "profile-dir", "", "serve /start_profile and /stop_profile; the stop writes a Kineto trace of the profiled steps into this directory")
	f.Float64Var(&profileSlowdown, "profile-slowdown", sim.DefaultProfileSlowdown, "step-time factor while profiling (1 to 10)")
	f.BoolVar(&list, "list", false, "list the embedded scenarios and their owner layers")
	f.BoolVar(&showContract, "contract", false, "print the scenario's workload contract and exit")
	return cmd
}

// checkLoopback refuses non-loopback binds: the sim has no authentication.
func checkLoopback(addr, flag string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usageErrorf("%s %q: %v", flag, addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return usageErrorf("%s %q: pel sim binds loopback only (127.0.0.1, ::1 or localhost)", flag, addr)
	}
	return nil
}
