package scrape

import (
	"fmt"
	"sort"
	"strings"

	"github.com/pel-ladder/pel/engine"
)

// Normalized quantities: what an adapter extracts from a page before any windowing. The
// engines' are package engine's (its table maps each to the engines' families); the
// devices' (DCGM) are here.
const (
	qWaiting        = engine.QWaiting
	qRunning        = engine.QRunning
	qKVUsage        = engine.QKVUsage
	qPreemptions    = engine.QPreemptions
	qPrefixQueries  = engine.QPrefixQueries
	qPrefixHits     = engine.QPrefixHits
	qPrefixHitGauge = engine.QPrefixHitGauge
	qPromptTokens   = engine.QPromptTokens
	qGenTokens      = engine.QGenTokens
	qTTFT           = engine.QTTFT
	qITL            = engine.QITL
	qE2E            = engine.QE2E
	qQueue          = engine.QQueue
	qPrefill        = engine.QPrefill
	qDecode         = engine.QDecode
	qIterTokens     = engine.QIterTokens
	qSpecDrafts     = engine.QSpecDrafts
	qSpecDraftTok   = engine.QSpecDraftTok
	qSpecAccepted   = engine.QSpecAccepted
	qSpecRateGauge  = engine.QSpecRateGauge
	qSpecLenGauge   = engine.QSpecLenGauge
	qServiceSeconds = engine.QServiceSeconds
	qSteps          = engine.QSteps
	qTokensMax      = engine.QTokensMax
	qStepLag        = engine.QStepLag
	qClockSkipped   = engine.QClockSkipped

	qGPUUtil      = "gpu_util"      // gauge, ratio
	qSMActive     = "sm_active"     // gauge, ratio
	qSMOccupancy  = "sm_occupancy"  // gauge, ratio
	qTensorActive = "tensor_active" // gauge, ratio
	qDRAMActive   = "dram_active"   // gauge, ratio
	qFBUsed       = "fb_used"       // gauge, MiB
	qNVLink       = "nvlink_bps"    // gauge, bytes/s (TX+RX)
	qPCIe         = "pcie_bps"      // gauge, bytes/s (TX+RX)
)

type qkind int

// The kinds are package engine's.
const (
	kGauge   = qkind(engine.Gauge)
	kCounter = qkind(engine.Counter)
	kHist    = qkind(engine.Hist)
)

// target maps one normalized quantity to the families that carry it on one engine.
type target struct {
	q     string
	kind  qkind
	fams  []string          // candidates, most preferred first: the first one present on an endpoint wins
	match map[string]string // label filter (TRT-LLM discriminator labels)
	scale float64           // multiply to reach the normalized unit (0 means 1)
	all   bool              // use every candidate present and add them (TX + RX)
	ratio bool              // within one replica, average several series instead of adding them
}

// Adapter maps one engine's /metrics names to the normalized quantities.
type Adapter struct {
	Engine string // vllm, sglang, tgi, triton, trtllm-serve, llamacpp, dcgm
	Kind   string // engine | dcgm
	// Replica lists the labels that tell replicas (data-parallel engines, GPUs, MIG
	// instances) apart on one endpoint; series that differ only in other labels
	// (model_name, finished_reason...) belong to the same replica.
	Replica []string
	// targets in preference order: per quantity, the first one present on a page wins.
	targets []target
	// prefixes identify the engine's families in auto-detection.
	prefixes []string
}

func (a *Adapter) source() string {
	if a.Kind == KindDCGM {
		return "dcgm"
	}
	return a.Engine + " /metrics"
}

// adapters are the engines of package engine's table, then DCGM's exporter.
var adapters = append(engineAdapters(), dcgmAdapter)

// engineAdapters reads package engine's table.
func engineAdapters() []*Adapter {
	var out []*Adapter
	for _, p := range engine.Profiles {
		a := &Adapter{Engine: p.Name, Kind: KindEngine, Replica: p.Replica, prefixes: p.Prefixes}
		for _, m := range p.Metrics {
			a.targets = append(a.targets, target{q: m.Q, kind: qkind(m.Kind), fams: m.Families, match: m.Match, scale: m.Scale, all: m.All, ratio: m.Ratio})
		}
		out = append(out, a)
	}
	return out
}

// dcgmAdapter reads dcgm-exporter's page.
// dcgm-exporter. PROF_* activity fields are ratios 0..1; GPU_UTIL is a percent.
// PROF_{NVLINK,PCIE}_{TX,RX}_BYTES are rates in bytes/s whatever TYPE the exporter's CSV
// declares for them. MIG instances are told apart by GPU_I_ID.
var dcgmAdapter = &Adapter{
	Engine: "dcgm", Kind: KindDCGM, Replica: []string{"gpu", "GPU_I_ID"}, prefixes: []string{"DCGM_FI_"},
	targets: []target{
		{q: qGPUUtil, kind: kGauge, ratio: true, scale: 0.01, fams: []string{"DCGM_FI_DEV_GPU_UTIL"}},
		{q: qSMActive, kind: kGauge, ratio: true, fams: []string{"DCGM_FI_PROF_SM_ACTIVE"}},
		{q: qSMOccupancy, kind: kGauge, ratio: true, fams: []string{"DCGM_FI_PROF_SM_OCCUPANCY"}},
		{q: qTensorActive, kind: kGauge, ratio: true, fams: []string{"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"}},
		{q: qDRAMActive, kind: kGauge, ratio: true, fams: []string{"DCGM_FI_PROF_DRAM_ACTIVE"}},
		{q: qFBUsed, kind: kGauge, fams: []string{"DCGM_FI_DEV_FB_USED"}},
		{q: qNVLink, kind: kGauge, all: true, fams: []string{"DCGM_FI_PROF_NVLINK_TX_BYTES", "DCGM_FI_PROF_NVLINK_RX_BYTES"}},
		{q: qPCIe, kind: kGauge, all: true, fams: []string{"DCGM_FI_PROF_PCIE_TX_BYTES", "DCGM_FI_PROF_PCIE_RX_BYTES"}},
	},
}

// Engines lists the engine names accepted as an override.
func Engines() []string {
	var out []string
	for _, a := range adapters {
		if a.Kind == KindEngine {
			out = append(out, a.Engine)
		}
	}
	return out
}

// AdapterFor returns the adapter named engine ("sim" reads as vllm: pel sim serves
// vLLM V1 names).
func AdapterFor(name string) (*Adapter, error) {
	e := strings.ToLower(strings.TrimSpace(name))
	if p := engine.Lookup(e); p != engine.Generic {
		e = p.Name
	}
	for _, a := range adapters {
		if a.Engine == e {
			return a, nil
		}
	}
	return nil, fmt.Errorf("unknown engine %q (known: %s, dcgm)", name, strings.Join(Engines(), ", "))
}

// Detect picks the adapter whose families are on the page(s): the one with the most
// families carrying its prefix, then the one whose target families match most names
// (trtllm-serve has no prefix). nil when nothing is recognised.
func Detect(names map[string]bool) *Adapter {
	var best *Adapter
	bestScore := 0
	for _, a := range adapters {
		score := 0
		for n := range names {
			for _, p := range a.prefixes {
				if strings.HasPrefix(n, p) {
					score += 2
					break
				}
			}
		}
		for _, t := range a.targets {
			for _, f := range t.fams {
				if names[f] {
					score++
				}
			}
		}
		if score > bestScore {
			best, bestScore = a, score
		}
	}
	return best
}

// MappingTable renders the adapters as a Markdown table (the package doc carries a copy;
// a test keeps them in step).
func MappingTable() string {
	var b strings.Builder
	b.WriteString("| engine | quantity | families (first present wins) |\n|---|---|---|\n")
	for _, a := range adapters {
		for _, t := range a.targets {
			fams := strings.Join(t.fams, ", ")
			if t.all {
				fams = strings.Join(t.fams, " + ")
			}
			if len(t.match) > 0 {
				var m []string
				for k, v := range t.match {
					m = append(m, k+"="+v)
				}
				sort.Strings(m)
				fams += " {" + strings.Join(m, ",") + "}"
			}
			if t.scale != 0 && t.scale != 1 {
				fams += fmt.Sprintf(" ×%g", t.scale)
			}
			fmt.Fprintf(&b, "| %s | %s | %s |\n", a.Engine, t.q, fams)
		}
	}
	return b.String()
}
