#!/usr/bin/env python3
"""hta_ref.py: a literal, pandas-free re-implementation of the Holistic Trace Analysis (HTA)
computations that pel's `trace` package reproduces, used to pin pel's figures against HTA's.

It follows HTA's code line by line (facebookresearch/HolisticTraceAnalysis, MIT licence), as
read from these files and commits:

  hta/common/trace_parser.py      6f2e9605a5ced09561a6d3b05a6f549bf7dd4620
        _parse_trace_dataframe_json (the default JSON backend), round_down_time_stamps,
        _compress_df (memory instant events, dropna(dur, cat), cat "Trace" dropped, args
        defaults, normalize_gpu_stream_numbers)
  hta/utils/utils.py              12938348791 (find_string id) normalize_gpu_stream_numbers;
                                  0c2146a8d003629a67f225528969752e1f0656aa get_kernel_type,
                                  merge_kernel_intervals
  hta/common/trace.py             05dc179d2eb1a4cfac54dcbe60d1ef24af1ec183
        transform_correlation_to_index, parse_trace_file, load_traces,
        _align_all_ranks, _filter_irrelevant_gpu_kernels
  hta/common/trace_filter.py      0350e30e6ae895752fa12cf205d55aef112b7b7a
        GPUKernelFilter (stream > 0), CPUOperatorFilter (stream == -1)
  hta/common/trace_symbol_table.py (newest read, with XPU masks) get_runtime_launch_events_mask
  hta/analyzers/breakdown_analysis.py 0205626ad25c901d9110da8664cb22750508bb2c
        get_temporal_breakdown, _get_idle_time_for_kernels, _analyze_idle_time_for_stream,
        get_idle_time_breakdown, get_gpu_kernel_breakdown, _get_gpu_kernel_type_time
  hta/analyzers/communication_analysis.py 0c2146a8d003629a67f225528969752e1f0656aa
        get_comm_comp_overlap
  hta/analyzers/cuda_kernel_analysis.py  0c2146a8d003629a67f225528969752e1f0656aa
        cuda_kernel_launch_stats (runtime_cutoff=50, launch_delay_cutoff=100,
        include_memory_events=True)
  hta/analyzers/trace_counters.py 0935ba350e84f3d7e2e43338dc4065780d78cbf6
        _get_queue_length_time_series_for_rank, get_queue_length_summary
  hta/trace_analysis.py           defaults: consecutive_kernel_delay=30,
                                  include_memory_kernels=True, include_last_profiler_step=False

A DataFrame is a list of dict rows here; a pandas operation is written out as the loop it
performs. Two pandas behaviours cannot be reproduced exactly and are made explicit instead:
  * sort_values(by="ts") uses an unstable quicksort: rows with equal "ts" may come in any
    order. This script sorts stably (file order) and counts such ties ("ts_ties") so a reader
    knows where HTA's own result could vary between runs/machines.
  * an HTA call that raises (an empty GPU frame in get_temporal_breakdown, a missing
    "cudaLaunchKernel" symbol in cuda_kernel_launch_stats, the queue-length assertion) is
    reported as {"error": "..."} for that quantity.

Usage (stdlib only, Python >= 3.8):
    python3 trace/testdata/hta_ref/hta_ref.py trace/testdata/kineto/*.json.gz
writes trace/testdata/hta_ref/<fixture>.json next to this script; pel's TestHTAReference
(trace/hta_ref_test.go) compares pel's figures with them.
"""

import gzip
import json
import math
import os
import re
import sys

NAN = float("nan")

# ---------------------------------------------------------------- loading (trace_parser.py)


def parse_trace_dict(path):
    with (gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")) as fh:
        return json.loads(fh.read())


def is_nan(x):
    return isinstance(x, float) and math.isnan(x)


def round_down_time_stamps(events):
    """round_down_time_stamps: only when the ts column is float64, i.e. some event has a
    float ts or none at all (NaN). end = ts + dur; ts = ceil(ts); end = floor(end)."""
    floaty = any(isinstance(e.get("ts"), float) or "ts" not in e for e in events)
    if not floaty:
        return False
    for e in events:
        ts = e.get("ts", NAN)
        dur = e.get("dur", NAN)
        ts = NAN if ts is None else float(ts)
        dur = NAN if dur is None else float(dur)
        end = ts + dur
        e["ts"] = NAN if math.isnan(ts) else math.ceil(ts)
        e["end"] = NAN if math.isnan(end) else math.floor(end)
        e["dur"] = e["end"] - e["ts"] if not (is_nan(e["end"]) or is_nan(e["ts"])) else NAN
    return True


def normalize_stream(v):
    # normalize_gpu_stream_numbers: int(stream), -1 when that raises ValueError ("0x0").
    try:
        return int(v)
    except (ValueError, TypeError):
        return -1


# HTA 0.6 (PR #325, ParserConfig.max_event_duration_us): _compress_df drops events whose
# (rounded) duration is negative or longer than 7 days. Older releases keep them. main()
# computes both ways and records whether the figures differ.
MAX_EVENT_DURATION_US = 604_800_000_000
DROP_BAD_DURATIONS = False


def parse_trace_file(path):
    rec = parse_trace_dict(path)
    meta = {k: v for k, v in rec.items() if k != "traceEvents"}
    events = rec.get("traceEvents", [])
    rounded = round_down_time_stamps(events)
    rows = []
    for index, e in enumerate(events):  # df.reset_index(): "index" is the position
        # _compress_df: memory instant events get dur 0
        if e.get("ph") == "i" and e.get("name") == "[memory]" and e.get("cat") == "cpu_instant_event":
            e["dur"] = 0
        dur = e.get("dur", NAN)
        cat = e.get("cat")
        if dur is None or is_nan(dur) or cat is None:  # dropna(subset=["dur", "cat"])
            continue
        if cat == "Trace":
            continue
        if DROP_BAD_DURATIONS and (dur < 0 or dur > MAX_EVENT_DURATION_US):
            continue
        args = e.get("args")
        if not isinstance(args, dict):
            args = {}
        row = {
            "index": index,
            "ts": e.get("ts", NAN),
            "dur": dur,
            "cat": cat,
            "name": e.get("name"),
            "stream": normalize_stream(args.get("stream", -1)),
            "correlation": args.get("correlation", -1),
        }
        rows.append(row)
    transform_correlation_to_index(rows)
    for r in rows:  # parse_trace_file: df["end"] = df["ts"] + df["dur"] (before alignment)
        r["end"] = r["ts"] + r["dur"]
    return meta, rows, rounded


def transform_correlation_to_index(rows):
    """index_correlation = min(correlation, 0), then CPU (stream == -1) and GPU (stream > 0)
    rows with correlation != -1 are inner-merged on correlation; each side gets the other's
    index, the last merged pair writing wins (df.loc[...] = values)."""
    for r in rows:
        r["index_correlation"] = min(r["correlation"], 0)
    corr = [r for r in rows if r["correlation"] != -1]
    on_cpu = [r for r in corr if r["stream"] == -1]
    on_gpu = {}
    for r in corr:
        if r["stream"] > 0:
            on_gpu.setdefault(r["correlation"], []).append(r)
    by_index = {r["index"]: r for r in rows}
    pairs = []
    for c in on_cpu:  # merge(how="inner") keeps the left (CPU) order
        for g in on_gpu.get(c["correlation"], []):
            pairs.append((c["index"], g["index"]))
    for x, y in pairs:
        by_index[x]["index_correlation"] = y
    for x, y in pairs:
        by_index[y]["index_correlation"] = x


PROFILER_STEP = re.compile(r"^ProfilerStep#(\d+)")  # hta/common/types.py ProfilerStepGroupingPattern


def load_trace(path, include_last_profiler_step=False):
    """Trace.load_traces for one file: parse, _align_all_ranks, _filter_irrelevant_gpu_kernels,
    then index the frame by its "index" column."""
    meta, rows, rounded = parse_trace_file(path)
    info = {"rounded_ts": rounded, "filtered": False}
    if rows:
        min_ts = min(r["ts"] for r in rows if not is_nan(r["ts"]))
        for r in rows:
            r["ts"] = r["ts"] - min_ts  # "end" keeps the unaligned value, as in HTA
    step_ids = sorted({r["name"] for r in rows if isinstance(r["name"], str) and PROFILER_STEP.match(r["name"])})
    info["profiler_steps"] = step_ids
    if len(step_ids) >= 2:
        cpu = [r for r in rows if r["stream"] == -1]
        if cpu:
            gpu = [r for r in rows if r["stream"] > 0]
            steps = [r for r in cpu if r["name"] in step_ids]
            last_start = max(r["ts"] for r in steps) if steps else min(r["ts"] for r in cpu)
            last_end = max(r["end"] for r in steps) if steps else max(r["end"] for r in cpu)
            if include_last_profiler_step:
                cpu = [r for r in cpu if r["ts"] <= last_end]
            else:
                cpu = [r for r in cpu if r["ts"] < last_start]
            # gpu_kernels.merge(cpu_kernels["correlation"], on="correlation", how="inner"):
            # one output row per matching CPU row, in the left (GPU) order
            cpu_corr_count = {}
            for r in cpu:
                cpu_corr_count[r["correlation"]] = cpu_corr_count.get(r["correlation"], 0) + 1
            kept_gpu = []
            for g in gpu:
                kept_gpu.extend([g] * cpu_corr_count.get(g["correlation"], 0))
            info["duplicated_gpu_rows"] = len(kept_gpu) - len({id(g) for g in kept_gpu})
            rows = kept_gpu + cpu
            info["filtered"] = True
            info["last_step_start_aligned"] = last_start
    dist = meta.get("distributedInfo") or {}
    rank = dist.get("rank", 0) if isinstance(dist, dict) else 0
    return rank, rows, info


# ---------------------------------------------------------------- helpers (utils.py)


def get_kernel_type(name):
    if "ncclKernel" in name:
        return "COMMUNICATION"
    if "Memcpy" in name or "Memset" in name:
        return "MEMORY"
    return "COMPUTATION"


def merge_kernel_intervals(kernels):
    """sort by ts; group = (ts > end.shift().cummax()).cumsum(); per group min ts, max end."""
    ks = sorted(kernels, key=lambda r: r["ts"])
    out = []
    run_max = None
    for r in ks:
        ts, end = r["ts"], r["ts"] + r["dur"]
        if run_max is None or not ts > run_max:
            if out:
                out[-1][0] = min(out[-1][0], ts)
                out[-1][1] = max(out[-1][1], end)
            else:
                out.append([ts, end])
        else:
            out.append([ts, end])
        run_max = end if run_max is None else max(run_max, end)
    return out


def ts_ties(rows):
    seen, ties = set(), 0
    for r in rows:
        if r["ts"] in seen:
            ties += 1
        seen.add(r["ts"])
    return ties


def num(x):
    """JSON-friendly number: ints stay ints, integral floats become ints."""
    if isinstance(x, float):
        if math.isnan(x):
            return None
        if x == int(x):
            return int(x)
        return x
    return x


def np_round(x, nd):
    """numpy.round(x, nd) (what pandas' Series/DataFrame .round and round(Series) call):
    rint(x * 10**nd) / 10**nd, half to even on the scaled float."""
    p = 10.0 ** nd
    return round(x * p) / p


# ---------------------------------------------------------------- analyses


def temporal_breakdown(rows):
    """BreakdownAnalysis.get_temporal_breakdown (per rank)."""
    gpu = [r for r in rows if r["stream"] != -1]
    if not gpu:
        return {"error": "no GPU events: HTA's _get_idle_time_for_kernels indexes an empty frame"}
    merged = merge_kernel_intervals(gpu)
    kernel_time = merged[-1][1] - merged[0][0]
    run = sum(e for _, e in merged) - sum(s for s, _ in merged)
    idle = kernel_time - run
    comp = merge_kernel_intervals([r for r in gpu if get_kernel_type(r["name"]) == "COMPUTATION"])
    compute = sum(e for _, e in comp) - sum(s for s, _ in comp)
    non_compute = kernel_time - compute - idle
    return {
        "kernel_time": num(kernel_time),
        "idle_time": num(idle),
        "compute_time": num(compute),
        "non_compute_time": num(non_compute),
        "idle_time_pctg": np_round(100 * (idle / kernel_time), 2) if kernel_time else None,
        "compute_time_pctg": np_round(100 * (compute / kernel_time), 2) if kernel_time else None,
        "non_compute_time_pctg": np_round(100 * (non_compute / kernel_time), 2) if kernel_time else None,
        "gpu_events": len(gpu),
    }


def idle_time_breakdown(rows, consecutive_kernel_delay=30):
    """BreakdownAnalysis.get_idle_time_breakdown / _analyze_idle_time_for_stream."""
    ts_by_index = {}
    for r in rows:  # trace_df[["ts", "index"]] indexed by "index"
        ts_by_index.setdefault(r["index"], r["ts"])
    gpu = [r for r in rows if r["stream"] != -1]
    streams = []
    for r in gpu:  # gpu_kernels.stream.unique(): order of appearance
        if r["stream"] not in streams:
            streams.append(r["stream"])
    out = []
    ties = 0
    for s in streams:
        ks = sorted([r for r in gpu if r["stream"] == s], key=lambda r: r["ts"])
        ties += ts_ties(ks)
        sums = {}
        prev_end = None
        for r in ks:
            end_ts = r["ts"] + r["dur"]
            if prev_end is None:
                cat = "other"  # idle_interval is NaN: summed as nothing
                interval = None
            else:
                interval = r["ts"] - prev_end
                ts_rt = ts_by_index.get(r["index_correlation"])  # join on index_correlation
                host = ts_rt is not None and ts_rt > prev_end
                if host:
                    cat = "host_wait"
                elif interval < consecutive_kernel_delay:
                    cat = "kernel_wait"
                else:
                    cat = "other"
            if interval is not None:
                sums[cat] = sums.get(cat, 0) + interval
            else:
                sums.setdefault(cat, 0)
            prev_end = end_ts
        out.append({
            "stream": s,
            "host_wait": num(sums.get("host_wait", 0)),
            "kernel_wait": num(sums.get("kernel_wait", 0)),
            "other": num(sums.get("other", 0)),
        })
    return out, ties


def kernel_type_time(rows):
    """BreakdownAnalysis._get_gpu_kernel_type_time with include_memory_kernels=True and the
    percentage of get_gpu_kernel_breakdown (rounded to 1 decimal)."""
    gpu = [r for r in rows if r["stream"] != -1]
    types = ["COMPUTATION", "COMMUNICATION", "MEMORY"]
    mapping = {t: 1 << i for i, t in enumerate(types)}
    points = []
    for t in types:
        for s, e in merge_kernel_intervals([r for r in gpu if get_kernel_type(r["name"]) == t]):
            points.append((s, mapping[t]))
            points.append((e, -mapping[t]))
    points.sort(key=lambda p: p[0])
    sums = {}
    running = 0
    for i, (t, st) in enumerate(points):
        running += st
        if running > 0 and i + 1 < len(points):
            label = " overlapping ".join(k for k, v in mapping.items() if running & v)
            sums[label] = sums.get(label, 0) + (points[i + 1][0] - t)
    total = sum(sums.values())
    res = [{"kernel_type": k, "sum": num(v), "percentage": np_round(v / total * 100, 1) if total else None}
           for k, v in sums.items()]
    res.sort(key=lambda x: (-x["sum"], x["kernel_type"]))
    return res


def kernel_stats(rows):
    """get_gpu_kernel_breakdown's per-name aggregation before the top-k/"others" folding:
    sum, max, min, mean and count of dur per kernel name (stream != -1)."""
    agg = {}
    for r in rows:
        if r["stream"] == -1:
            continue
        a = agg.setdefault(r["name"], {"name": r["name"], "kernel_type": get_kernel_type(r["name"]),
                                       "count": 0, "sum": 0, "min": None, "max": None})
        a["count"] += 1
        a["sum"] += r["dur"]
        a["min"] = r["dur"] if a["min"] is None else min(a["min"], r["dur"])
        a["max"] = r["dur"] if a["max"] is None else max(a["max"], r["dur"])
    out = []
    for a in agg.values():
        a["mean"] = a["sum"] / a["count"]
        for k in ("sum", "min", "max", "mean"):
            a[k] = num(a[k])
        out.append(a)
    out.sort(key=lambda a: (-a["sum"], a["name"]))
    return out


def comm_comp_overlap(rows):
    """CommunicationAnalysis.get_comm_comp_overlap: time with running == 3 over the merged
    communication time; NaN (null) without communication kernels."""
    gpu = [r for r in rows if r["stream"] != -1]
    comp = merge_kernel_intervals([r for r in gpu if get_kernel_type(r["name"]) == "COMPUTATION"])
    comm = merge_kernel_intervals([r for r in gpu if get_kernel_type(r["name"]) == "COMMUNICATION"])
    status = [(s, 1) for s, _ in comm] + [(e, -1) for _, e in comm] + \
             [(s, 2) for s, _ in comp] + [(e, -2) for _, e in comp]
    # melt() lists all "ts" then all "end" per frame; the sort is by time
    status.sort(key=lambda p: p[0])
    running, overlap = 0, 0
    for i, (t, st) in enumerate(status):
        running += st
        if running == 3 and i + 1 < len(status):
            overlap += status[i + 1][0] - t
    comm_t = sum(e - s for s, e in comm)
    if comm_t == 0:
        return None
    return np_round(100 * (overlap / comm_t), 2)


def median(v):
    s = sorted(v)
    n = len(s)
    if n == 0:
        return None
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def launch_stats(rows, runtime_cutoff=50, launch_delay_cutoff=100):
    """CudaKernelAnalysis.cuda_kernel_launch_stats (include_memory_events=True)."""
    # sym_index["cudaLaunchKernel"] etc. are plain dict lookups on the symbol table (every
    # name parsed, before the step filter): HTA raises KeyError when one is absent. The
    # figures below are still computed (an absent name matches nothing) and flagged.
    sym = launch_stats.symbols
    missing = [n for n in ("cudaLaunchKernel", "cudaMemcpyAsync", "cudaMemsetAsync") if n not in sym]
    raises = ("KeyError: %s not in the symbol table" % ", ".join(missing)) if missing else None
    corr = set(r["correlation"] for r in rows if r["name"] == "cudaLaunchKernel")
    corr |= set(r["correlation"] for r in rows if r["name"] in ("cudaMemsetAsync", "cudaMemcpyAsync"))
    cpu = [r for r in rows if r["stream"] == -1 and r["correlation"] in corr]
    gpu = {}
    for r in rows:
        if r["stream"] != -1 and r["correlation"] in corr:
            gpu.setdefault(r["correlation"], []).append(r)
    joined = []
    for c in cpu:
        for g in gpu.get(c["correlation"], []):
            joined.append((c, g))
    cpu_d = [c["dur"] for c, _ in joined]
    gpu_d = [g["dur"] for _, g in joined]
    hta_delay = [g["ts"] - c["ts"] + c["dur"] for c, g in joined]  # HTA's code, verbatim
    doc_delay = [g["ts"] - (c["ts"] + c["dur"]) for c, g in joined]  # HTA's documentation
    n = len(joined)
    return {
        "hta_raises": raises,
        "count": n,
        "short_kernels": sum(1 for c, g in joined if c["dur"] <= runtime_cutoff and g["dur"] < c["dur"]),
        "runtime_outliers": sum(1 for c, _ in joined if c["dur"] > runtime_cutoff),
        "launch_delay_outliers_hta_formula": sum(1 for d in hta_delay if d > launch_delay_cutoff),
        "launch_delay_outliers_doc": sum(1 for d in doc_delay if d > launch_delay_cutoff),
        "cpu_duration_median": num(median(cpu_d)),
        "gpu_duration_median": num(median(gpu_d)),
        "launch_delay_mean_hta_formula": (sum(hta_delay) / n) if n else None,
        "launch_delay_mean_doc": (sum(doc_delay) / n) if n else None,
        "launch_delay_median_doc": num(median(doc_delay)),
        "launch_delay_median_hta_formula": num(median(hta_delay)),
    }


LAUNCH_NAMES = {
    "cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx",
    "cudaMemcpyAsync", "cudaMemsetAsync", "runFunction - job_prep_and_submit_for_execution",
    "hipLaunchKernel", "hipExtModuleLaunchKernel", "hipMemsetAsync", "hipMemcpyAsync",
    "hipMemcpyWithStream",
}


def queue_length(rows):
    """TraceCounters._get_queue_length_time_series_for_rank + get_queue_length_summary
    (describe(): count, mean, max per stream)."""
    runtime = [r for r in rows if r["name"] in LAUNCH_NAMES and r["index_correlation"] > 0]
    gpu = [r for r in rows if r["stream"] != -1]
    gpu_by_corr = {}
    for g in gpu:
        gpu_by_corr.setdefault(g["correlation"], []).append(g)
    runtime_filt = []
    for r in runtime:  # left join on correlation
        matches = gpu_by_corr.get(r["correlation"], [])
        if not matches:
            runtime_filt.append((r["ts"], None, 1))
        for g in matches:
            runtime_filt.append((r["ts"], g["stream"], 1))
    rcorr = {r["correlation"] for r in runtime}
    gpu_filt = [(g["ts"], g["stream"], -1) for g in gpu if g["correlation"] in rcorr]
    if len(runtime_filt) != len(gpu_filt):
        return {"error": "AssertionError: %d runtime rows vs %d GPU rows" % (len(runtime_filt), len(gpu_filt))}, 0
    def series(merged):
        per = {}
        for ts, s, q in merged:
            if s is None:
                continue  # groupby drops the NaN stream group
            per.setdefault(s, []).append((ts, q))
        return per

    # stable sort: at equal ts the launch (+1, concatenated first) precedes the start (-1).
    # HTA's quicksort may order ties either way; "mean_if_starts_first" is the other extreme.
    per = series(sorted(runtime_filt + gpu_filt, key=lambda p: p[0]))
    alt = series(sorted(runtime_filt + gpu_filt, key=lambda p: (p[0], p[2])))
    ties = 0
    out = []
    for s in sorted(per):
        pts = per[s]
        ties += ts_ties([{"ts": t} for t, _ in pts])
        means = []
        for seq in (pts, alt[s]):
            qlen, vals = 0, []
            for _, q in seq:
                qlen += q
                vals.append(qlen)
            means.append(sum(vals) / len(vals))
        out.append({"stream": s, "count": len(vals), "mean": means[0], "mean_if_starts_first": means[1],
                    "max": max(vals)})
    return out, ties


def analyze(path):
    raw_names = set()
    rank, rows, info = load_trace(path)
    # the symbol table (names and cats of every parsed row, before the step filter)
    _, all_rows, _ = parse_trace_file(path)
    for r in all_rows:
        raw_names.add(r["name"])
        raw_names.add(r["cat"])
    launch_stats.symbols = raw_names
    _, rows_keep, _ = load_trace(path, include_last_profiler_step=True)
    idle, idle_ties = idle_time_breakdown(rows)
    ql, ql_ties = queue_length(rows)
    return {
        "source": os.path.basename(path),
        "hta_defaults": {"include_last_profiler_step": False, "consecutive_kernel_delay": 30,
                         "runtime_cutoff": 50, "launch_delay_cutoff": 100,
                         "include_memory_kernels": True},
        "rank": rank,
        "load": info,
        "temporal": temporal_breakdown(rows),
        # load_traces(include_last_profiler_step=True): HTA compares the aligned ts of CPU
        # events with the unaligned end of the last step, so it keeps every CPU event.
        "temporal_keep_last_step": temporal_breakdown(rows_keep),
        "idle_time_breakdown": idle,
        "idle_ts_ties": idle_ties,
        "kernel_type_time": kernel_type_time(rows),
        "kernel_stats": kernel_stats(rows)[:10],
        "comm_comp_overlap_pctg": comm_comp_overlap(rows),
        "launch_stats": launch_stats(rows),
        "queue_length": ql,
        "queue_ts_ties": ql_ties,
    }


def main(argv):
    global DROP_BAD_DURATIONS
    if not argv:
        print(__doc__)
        return 2
    here = os.path.dirname(os.path.abspath(__file__))
    for path in argv:
        DROP_BAD_DURATIONS = True
        res06 = analyze(path)
        DROP_BAD_DURATIONS = False
        res = analyze(path)
        strip = lambda r: {k: v for k, v in r.items() if k != "load"}
        res["hta06_duration_filter_changes_figures"] = strip(res06) != strip(res)
        if res["hta06_duration_filter_changes_figures"]:
            print("warning: %s: HTA 0.6's duration filter changes the figures" % path)
        out = os.path.join(here, os.path.basename(path).replace(".trace.json.gz", "").replace(".json.gz", "").replace(".json", "") + ".json")
        with open(out, "w") as fh:
            json.dump(res, fh, indent=1, sort_keys=True)
            fh.write("\n")
        print("wrote", out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
