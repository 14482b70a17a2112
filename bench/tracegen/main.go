// Command tracegen writes a synthetic but realistically shaped PyTorch profiler (Kineto)
// trace of about the requested size, for benchmarking pel trace:
//
//	go run ./bench/tracegen -size 1GiB -o /tmp/trace-1g.json
//
// The layout follows real Kineto output (the fixtures in trace/testdata/kineto): metadata
// header with deviceProperties and distributedInfo, then per step a ProfilerStep#N
// annotation, aten:: cpu_op events, cudaLaunchKernel / cudaMemcpyAsync runtime calls with
// correlation ids, ac2g flow start/end pairs, kernels with Kineto's full args (grid, block,
// registers, occupancy), memcpy/memset, occasional NCCL all-reduce kernels on a second
// stream, python_function frames, float microsecond timestamps with ns resolution.
// The output is deterministic for a given -seed.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
)

var kernels = []string{
	"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)",
	"sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32_stage4_warpsize2x2x1_tensor16x8x16_kernel",
	"void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::half_t>, false, true, false, false, true, true, false>(Flash_fwd_params)",
	"void at::native::(anonymous namespace)::layer_norm_kernel<c10::Half, float>(long, float, c10::Half const*, c10::Half const*, c10::Half const*, float*, float*, c10::Half*)",
	"triton_poi_fused_add_mul_silu_0",
	"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, float, 4>)",
}

var ops = []string{"aten::add", "aten::mm", "aten::_flash_attention_forward", "aten::native_layer_norm", "aten::silu", "aten::mean"}

func parseSize(s string) (int64, error) {
	mult := int64(1)
	for _, u := range []struct {
		suf string
		m   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}} {
		if strings.HasSuffix(s, u.suf) {
			mult, s = u.m, strings.TrimSuffix(s, u.suf)
			break
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	return int64(v * float64(mult)), err
}

type countWriter struct {
	w *bufio.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func main() {
	size := flag.String("size", "100MiB", "approximate output size (KiB, MiB, GiB, KB, MB, GB)")
	out := flag.String("o", "", "output file (default stdout)")
	seed := flag.Uint64("seed", 1, "random seed")
	flag.Parse()
	target, err := parseSize(*size)
	if err != nil || target <= 0 {
		fmt.Fprintln(os.Stderr, "tracegen: bad -size:", *size)
		os.Exit(2)
	}
	f := os.Stdout
	if *out != "" {
		if f, err = os.Create(*out); err != nil {
			fmt.Fprintln(os.Stderr, "tracegen:", err)
			os.Exit(1)
		}
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	w := &countWriter{w: bw}
	rng := rand.New(rand.NewPCG(*seed, 2))
	fmt.Fprint(w, `{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85045100544, "computeMajor": 9, "computeMinor": 0, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536, "warpSize": 32, "sharedMemPerBlock": 49152, "numSms": 132}], "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 2}, "traceEvents": [`)
	var buf []byte
	ts := 1712195495505543.0 // µs
	corr := int64(1)
	ext := int64(1)
	first := true
	sep := func() {
		if !first {
			buf = append(buf, ",\n"...)
		}
		first = false
	}
	num := func(v float64) { buf = strconv.AppendFloat(buf, v, 'f', 3, 64) }
	gpuTS := ts + 50
	for step := 1; w.n+int64(len(buf)) < target; step++ {
		stepStart := ts
		nk := 200 + rng.IntN(100)
		sep()
		buf = append(buf, `{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#`...)
		buf = strconv.AppendInt(buf, int64(step), 10)
		buf = append(buf, `", "pid": 4242, "tid": 4242, "ts": `...)
		num(stepStart)
		// duration patched below is not possible in a stream; estimate it
		buf = append(buf, `, "dur": `...)
		num(float64(nk) * 14.0)
		buf = append(buf, `, "args": {"External id": `...)
		buf = strconv.AppendInt(buf, ext, 10)
		buf = append(buf, `, "Record function id": 0, "Ev Idx": 0}}`...)
		ext++
		for k := 0; k < nk; k++ {
			ki := rng.IntN(len(kernels))
			opDur := 6 + rng.Float64()*8
			// python frame
			if k%4 == 0 {
				sep()
				buf = append(buf, `{"ph": "X", "cat": "python_function", "name": "torch/nn/modules/module.py(1527): _call_impl", "pid": 4242, "tid": 4242, "ts": `...)
				num(ts)
				buf = append(buf, `, "dur": `...)
				num(opDur + 2)
				buf = append(buf, `, "args": {"Python parent id": 12, "Python id": 13, "Ev Idx": 5}}`...)
			}
			sep()
			buf = append(buf, `{"ph": "X", "cat": "cpu_op", "name": "`...)
			buf = append(buf, ops[ki]...)
			buf = append(buf, `", "pid": 4242, "tid": 4242, "ts": `...)
			num(ts)
			buf = append(buf, `, "dur": `...)
			num(opDur)
			buf = append(buf, `, "args": {"External id": `...)
			buf = strconv.AppendInt(buf, ext, 10)
			buf = append(buf, `, "Record function id": 0, "Sequence number": 1234, "Fwd thread id": 0, "Ev Idx": 17, "Input Dims": [[8, 1024, 4096], [4096, 4096]], "Input type": ["c10::Half", "c10::Half"]}}`...)
			launchTS := ts + 1.5
			launchDur := 3 + rng.Float64()*4
			api := "cudaLaunchKernel"
			cbid := 211
			isCopy := k%50 == 7
			if isCopy {
				api, cbid = "cudaMemcpyAsync", 41
			}
			sep()
			buf = append(buf, `{"ph": "X", "cat": "cuda_runtime", "name": "`...)
			buf = append(buf, api...)
			buf = append(buf, `", "pid": 4242, "tid": 4242, "ts": `...)
			num(launchTS)
			buf = append(buf, `, "dur": `...)
			num(launchDur)
			buf = append(buf, `, "args": {"External id": `...)
			buf = strconv.AppendInt(buf, ext, 10)
			buf = append(buf, `, "cbid": `...)
			buf = strconv.AppendInt(buf, int64(cbid), 10)
			buf = append(buf, `, "correlation": `...)
			buf = strconv.AppendInt(buf, corr, 10)
			buf = append(buf, `}}`...)
			sep()
			buf = append(buf, `{"ph": "s", "id": `...)
			buf = strconv.AppendInt(buf, corr, 10)
			buf = append(buf, `, "pid": 4242, "tid": 4242, "ts": `...)
			num(launchTS)
			buf = append(buf, `, "cat": "ac2g", "name": "ac2g"}`...)
			// GPU side: kernels queue behind each other; sometimes the GPU idles
			start := max(gpuTS+0.8+rng.Float64()*2, launchTS+launchDur+1)
			kdur := 1 + rng.ExpFloat64()*9
			stream := 7
			name := kernels[ki]
			cat := "kernel"
			if isCopy {
				cat, name = "gpu_memcpy", "Memcpy HtoD (Pinned -> Device)"
			} else if k%97 == 3 {
				stream, name, kdur = 20, "ncclDevKernel_AllReduce_Sum_f16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", 40+rng.Float64()*60
			}
			sep()
			buf = append(buf, `{"ph": "X", "cat": "`...)
			buf = append(buf, cat...)
			buf = append(buf, `", "name": "`...)
			buf = append(buf, name...)
			buf = append(buf, `", "pid": 0, "tid": `...)
			buf = strconv.AppendInt(buf, int64(stream), 10)
			buf = append(buf, `, "ts": `...)
			num(start)
			buf = append(buf, `, "dur": `...)
			num(kdur)
			buf = append(buf, `, "args": {"External id": `...)
			buf = strconv.AppendInt(buf, ext, 10)
			if cat == "kernel" {
				buf = append(buf, `, "queued": 0, "device": 0, "context": 1, "stream": `...)
				buf = strconv.AppendInt(buf, int64(stream), 10)
				buf = append(buf, `, "correlation": `...)
				buf = strconv.AppendInt(buf, corr, 10)
				buf = append(buf, `, "registers per thread": 32, "shared memory": 0, "blocks per SM": 4.848485, "warps per SM": 19.393940, "grid": [640, 1, 1], "block": [128, 1, 1], "est. achieved occupancy %": 30}}`...)
			} else {
				buf = append(buf, `, "device": 0, "context": 1, "stream": 7, "correlation": `...)
				buf = strconv.AppendInt(buf, corr, 10)
				buf = append(buf, `, "bytes": 1048576, "memory bandwidth (GB/s)": 412.5}}`...)
			}
			sep()
			buf = append(buf, `{"ph": "f", "id": `...)
			buf = strconv.AppendInt(buf, corr, 10)
			buf = append(buf, `, "pid": 0, "tid": `...)
			buf = strconv.AppendInt(buf, int64(stream), 10)
			buf = append(buf, `, "ts": `...)
			num(start)
			buf = append(buf, `, "cat": "ac2g", "name": "ac2g", "bp": "e"}`...)
			if stream == 7 {
				gpuTS = start + kdur
			}
			corr++
			ext++
			ts += opDur + 0.5 + rng.ExpFloat64()*2
		}
		if len(buf) > 1<<20 {
			w.Write(buf)
			buf = buf[:0]
		}
	}
	w.Write(buf)
	fmt.Fprint(w, "\n], \"traceName\": \"tracegen\", \"displayTimeUnit\": \"ms\"}\n")
	if err := bw.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "tracegen:", err)
		os.Exit(1)
	}
	if f != os.Stdout {
		f.Close()
	}
	fmt.Fprintf(os.Stderr, "tracegen: wrote %d bytes\n", w.n)
}
