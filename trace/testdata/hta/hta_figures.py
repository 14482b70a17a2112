#!/usr/bin/python3
"""Print Holistic Trace Analysis's own figures for one Kineto trace as JSON, for
TestAgainstHTA (trace/hta_test.go). HTA itself is the judge: nothing here computes a figure.

usage: hta_figures.py ORACLE_DIR TRACE.json[.gz] [--include-last-step]

ORACLE_DIR holds the project's hta_oracle.py and Meta's unmodified `hta` package. This runs
hta_oracle.main() as is (its JSON is the "oracle" member) and, on the same loaded trace,
asks HTA for the other figures pel reports under HTA's name ("extra"): the per-kernel
breakdown, cuda_kernel_launch_stats and the queue-length summary. One load per trace,
because parsing dominates HTA's run time.
"""
import contextlib, io, json, math, os, sys


def num(x):
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else x


def err(e):
    return f"{type(e).__name__}: {e}"[:300]


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    oracle_dir, trace = sys.argv[1], sys.argv[2]
    incl = "--include-last-step" in sys.argv[3:]
    sys.path.insert(0, oracle_dir)
    import hta_oracle  # also puts ORACLE_DIR/hta on sys.path

    loaded = []

    class Capture(hta_oracle.TraceAnalysis):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            loaded.append(self)

    hta_oracle.TraceAnalysis = Capture
    sys.argv = ["hta_oracle.py", trace] + (["--include-last-step"] if incl else [])
    buf = io.StringIO()
    out = {}
    try:
        with contextlib.redirect_stdout(buf):
            hta_oracle.main()
        out["oracle"] = json.loads(buf.getvalue())
    except SystemExit:
        raise
    except Exception as e:  # HTA raises on some inputs: the test lists which
        out["oracle_error"] = err(e)
    if not loaded:
        print(json.dumps(out, indent=1, sort_keys=True))
        return
    a = loaded[0]
    ranks = sorted(int(r) for r in a.t.traces.keys())
    extra = {"ranks": {str(r): {} for r in ranks}}
    try:
        _, kernels = a.get_gpu_kernel_breakdown(
            visualize=False, include_memory_kernels=True, num_kernels=1 << 40)
        for _, r in kernels.iterrows():
            extra["ranks"][str(int(r["rank"]))].setdefault("kernels", []).append({
                "name": r["name"], "kernel_type": r["kernel_type"], "sum_us": num(r["sum (us)"]),
                "min_us": num(r["min (us)"]), "max_us": num(r["max (us)"]), "mean_us": num(r["mean (us)"])})
    except Exception as e:
        extra["kernels_error"] = err(e)
    for rank in ranks:
        rk = extra["ranks"][str(rank)]
        try:
            df = a.get_cuda_kernel_launch_stats(ranks=[rank], visualize=False)[rank]
            cpu, gpu, delay = df["cpu_duration"], df["gpu_duration"], df["launch_delay"]
            # the three sets HTA's own plots show (cuda_kernel_analysis.py
            # visualize_cuda_launch_kernel_info), with the default cutoffs 50 and 100 µs
            rk["launch"] = {
                "count": int(len(df)),
                "short_kernels": int(((cpu <= 50) & (gpu < cpu)).sum()),
                "runtime_outliers": int((cpu > 50).sum()),
                "launch_delay_outliers": int((delay > 100).sum()),
                "launch_delay_mean_us": num(delay.mean()) if len(df) else None,
                "launch_delay_p50_us": num(delay.median()) if len(df) else None,
                "cpu_duration_p50_us": num(cpu.median()) if len(df) else None,
                "gpu_duration_p50_us": num(gpu.median()) if len(df) else None,
            }
        except Exception as e:
            rk["launch_error"] = err(e)
        try:
            q = a.get_queue_length_summary(ranks=[rank])
            rk["queue_length"] = {} if q is None else {
                str(int(stream)): {"mean": num(row[("queue_length", "mean")]),
                                   "max": num(row[("queue_length", "max")])}
                for (_, stream), row in q.iterrows()}
        except Exception as e:
            rk["queue_length_error"] = err(e)
    out["extra"] = extra
    print(json.dumps(out, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
