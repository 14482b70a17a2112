package scrape

import (
	"sort"
	"strconv"

	"github.com/pel-ladder/pel/evidence"
)

// serverMeans: the request-phase histograms whose means the time budget adds up.
var serverMeans = map[string]string{
	qQueue:   evidence.SigServerQueueMean,
	qPrefill: evidence.SigServerPrefillMean,
	qDecode:  evidence.SigServerDecodeMean,
	qTTFT:    evidence.SigServerTTFTMean,
	qE2E:     evidence.SigServerE2EMean,
}

// cacheConfigKeys maps vllm:cache_config_info labels (vLLM's CacheConfig, exported by
// vllm/v1/metrics/loggers.py as an info gauge) to Run.EngineConfig keys.
var cacheConfigKeys = map[string]string{
	"cache_dtype":           evidence.ConfigKVDType,
	"block_size":            evidence.ConfigBlockSize,
	"enable_prefix_caching": evidence.ConfigPrefixCaching,
	"num_gpu_blocks":        evidence.ConfigNumGPUBlocks,
}

// maxConfigValue bounds a configuration value copied from a page (outside input).
const maxConfigValue = 128

// systemConfig records what the scraped pages say of the system: the GPU model and count
// from DCGM's modelName and gpu labels, and vLLM's cache configuration from its info
// gauge, from the last good sample of each endpoint. A key the engine probe already set
// stays as it was.
func systemConfig(ev *evidence.Evidence, last map[string]*Sample) {
	eps := make([]string, 0, len(last))
	for ep := range last {
		eps = append(eps, ep)
	}
	sort.Strings(eps)
	set := func(k, v string) {
		if v == "" || len(v) > maxConfigValue {
			return
		}
		if ev.Run.EngineConfig == nil {
			ev.Run.EngineConfig = map[string]string{}
		}
		if _, ok := ev.Run.EngineConfig[k]; !ok {
			ev.Run.EngineConfig[k] = v
		}
	}
	gpus := map[string]bool{}
	model := ""
	for _, ep := range eps {
		s := last[ep]
		for _, f := range s.Families {
			switch {
			case s.Kind == KindDCGM:
				for _, m := range f.Metrics {
					if g, ok := m.Labels["gpu"]; ok && len(gpus) < 1024 {
						gpus[ep+"/"+g] = true
					}
					if mn := m.Labels["modelName"]; mn != "" && model == "" {
						model = mn
					}
				}
			case f.Name == "vllm:cache_config_info" && len(f.Metrics) > 0:
				for l, k := range cacheConfigKeys {
					set(k, f.Metrics[0].Labels[l])
				}
			}
		}
	}
	set(evidence.ConfigGPUModel, model)
	if len(gpus) > 0 {
		set(evidence.ConfigGPUCount, strconv.Itoa(len(gpus)))
	}
}
