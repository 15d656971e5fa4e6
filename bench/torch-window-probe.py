#!/usr/bin/env python3
"""Where does the PyTorch timing path's window differ from kqual's? (issue 55, item 7)

TorchFidelityDevice times the candidate's cubin through the path the PyTorch baselines take (a CUDA
graph holding [event, kernel, event], replayed after an L2 flush by torch's fill_) and through kqual's
worker (event, cuLaunchKernel, event on a stream, after a cuMemsetD32 flush). On one H100 host the
PyTorch path read ~0.38 us more around a 4.4 us kernel (2^16 f32). This probe times the same cubin
(residual_add_relu's good kernel, compiled here with nvcc) on the same torch tensors, one variable at
a time, samples interleaved across variants:

  graph_inner     graph [evA, K, evB] replayed; the events inside (today's PyTorch path)
  stream          evA, cuLaunchKernel, evB on the stream (kqual's events timer)
  graph_outer     graph [K] replayed between stream events (the graph launch inside the window)
  graph_inner_pre graph [K0, evA, K, evB]: a kernel node before the window's first event (K0 leaves
                  the data in L2: the timed K is warm)
  graph_2k        graph [evA, K, K, evB] (minus graph_inner: one more, warm, kernel inside a graph)
  stream_2k       evA, K, K, evB on the stream (minus stream: one more kernel on a stream)
  *_memset        the same with the flush done by cuMemsetD32Async (kqual's) instead of fill_
  *_none          no flush
  graph_inner_outer, *_ab, *_nohold: as the workers do it: stream events also recorded around the
                  inner graph's replay; two datasets (a graph each) alternating; the stream not held

Before every sample the stream is held by torch.cuda._sleep (so the host's enqueue never lies in the
window), then flushed. Prints one line per variant and size: median, p10, p90 (us), and writes JSON.

  python3 bench/torch-window-probe.py [OUT.json]        (needs a GPU, PyTorch and nvcc)
"""
import ctypes
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools", "torch"))
import kqual_cubin  # noqa: E402


def build_cubin(tmp):
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    src = os.path.join(tmp, "probe.cu")
    with open(src, "w") as f:
        f.write('#include "%s"\ntemplate __global__ void add_relu_vec<float>(const float*, const float*, float*, long long);\n'
                % os.path.join(ROOT, "candidates/residual_add_relu/good/kernel.cu"))
    cubin, ptx = os.path.join(tmp, "probe.cubin"), os.path.join(tmp, "probe.ptx")
    for kind, out in (("-cubin", cubin), ("-ptx", ptx)):
        subprocess.run([nvcc, kind, "-arch=sm_90", "-O3", "-o", out, src], check=True)
    names = re.findall(r"\.entry\s+(\S+?)\(", open(ptx).read())
    return cubin, [n for n in names if "add_relu_vec" in n][0]


def main():
    out_json = sys.argv[1] if len(sys.argv) > 1 else None
    tmp = tempfile.mkdtemp(prefix="kqual-window-probe-")
    cubin, kernel = build_cubin(tmp)
    lib = kqual_cubin._cuda()
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)
    l2 = getattr(props, "L2_cache_size", 50 << 20)
    flush_buf = torch.empty(2 * l2, dtype=torch.uint8, device=dev)
    stream = torch.cuda.Stream()
    torch.cuda.set_stream(stream)
    counter = [0]

    def flush(mode):
        counter[0] += 1
        if mode == "fill":
            flush_buf.fill_(counter[0] & 0xFF)
        elif mode == "memset":
            kqual_cubin._check(lib.cuMemsetD32Async(ctypes.c_uint64(flush_buf.data_ptr()), ctypes.c_uint(0x5A5A0000 + counter[0]),
                                                    ctypes.c_size_t(flush_buf.numel() // 4), ctypes.c_void_p(stream.cuda_stream)),
                               "cuMemsetD32Async")

    results = {"device": torch.cuda.get_device_name(dev), "torch": torch.__version__, "kernel": kernel, "sizes": {}}
    print("device:", results["device"], "torch", results["torch"], "kernel", kernel, flush=True)
    for log2n in [int(v) for v in os.environ.get("KQUAL_PROBE_LOG2N", "16 20 24").split()]:
        n = 1 << log2n
        x = torch.randn(n, device=dev)
        r = torch.randn(n, device=dev)
        y = torch.empty(n, device=dev)
        grid = max(1, min((n + 256 * 2 * 4 - 1) // (256 * 2 * 4), 1 << 30))
        spec = {"module": cubin, "kernel": kernel, "grid": [grid, 1, 1], "block": [256, 1, 1], "shared": 0,
                "args": [{"tensor": "x"}, {"tensor": "r"}, {"tensor": "y"}, {"value": n, "bytes": 8}]}
        k = kqual_cubin.CubinLaunch(spec).bind({"x": x, "r": r, "y": y}, ["y"])
        k()
        torch.cuda.synchronize()
        assert torch.equal(y, torch.relu(x + r)), "the probe kernel's output is wrong"

        def graph_of(body):
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, stream=stream):
                ev = body()
            torch.cuda.synchronize()
            return g, ev

        def inner_body(launch):
            e = (torch.cuda.Event(enable_timing=True, external=True), torch.cuda.Event(enable_timing=True, external=True))
            e[0].record()
            launch()
            e[1].record()
            return e

        def inner(pre, kernels):
            def body():
                if pre:
                    k()
                e = (torch.cuda.Event(enable_timing=True, external=True), torch.cuda.Event(enable_timing=True, external=True))
                e[0].record()
                for _ in range(kernels):
                    k()
                e[1].record()
                return e
            return graph_of(body)

        x2, r2 = torch.randn(n, device=dev), torch.randn(n, device=dev)
        y2 = torch.empty(n, device=dev)
        k2 = kqual_cubin.CubinLaunch(spec).bind({"x": x2, "r": r2, "y": y2}, ["y"])
        g_inner, e_inner = inner(False, 1)
        g_pre, e_pre = inner(True, 1)
        g_2k, e_2k = inner(False, 2)
        g_outer, _ = graph_of(lambda: k())
        g_inner_b, e_inner_b = graph_of(lambda: inner_body(k2))
        s0, s1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

        def around(enqueue):
            s0.record()
            enqueue()
            s1.record()
            return lambda: s0.elapsed_time(s1)

        def replay_inner(g, e, outer=False):
            if outer:  # as the PyTorch worker does: stream events around the replay, the inner ones read
                s0.record()
            g.replay()
            if outer:
                s1.record()
            return lambda: e[0].elapsed_time(e[1])

        windows = {
            "graph_inner": lambda d: replay_inner(g_inner, e_inner),
            "stream": lambda d: around(k),
            "graph_outer": lambda d: around(g_outer.replay),
            "graph_inner_pre": lambda d: replay_inner(g_pre, e_pre),
            "graph_2k": lambda d: replay_inner(g_2k, e_2k),
            "stream_2k": lambda d: around(lambda: (k(), k())),
            # Closer to the two workers: stream events around the inner graph's replay, two datasets
            # (one graph each) alternating, no sleep holding the stream.
            "graph_inner_outer": lambda d: replay_inner(g_inner, e_inner, True),
            "graph_inner_ab": lambda d: replay_inner((g_inner, g_inner_b)[d], (e_inner, e_inner_b)[d]),
            "graph_inner_outer_ab": lambda d: replay_inner((g_inner, g_inner_b)[d], (e_inner, e_inner_b)[d], True),
            "stream_ab": lambda d: around((k, k2)[d]),
        }
        # (window, flush, hold the stream first)
        variants = [(w, "fill", True) for w in windows] + [
            ("graph_inner", "memset", True), ("stream", "memset", True), ("graph_inner", "none", True), ("stream", "none", True),
            ("graph_inner", "fill", False), ("stream", "fill", False), ("graph_inner_outer_ab", "fill", False),
            ("stream_ab", "memset", False)]

        def name_of(w, m, hold):
            return w + ("" if m == "fill" else "_" + m) + ("" if hold else "_nohold")

        samples = {name_of(*v): [] for v in variants}
        for i in range(230):
            for w, m, hold in variants:
                if hold:
                    torch.cuda._sleep(200000)  # the host's enqueue lies outside every window
                flush(m)
                read = windows[w](i % 2)
                torch.cuda.synchronize()
                if i >= 30:  # warm-up
                    samples[name_of(w, m, hold)].append(1000.0 * read())
        row = {}
        for name, v in samples.items():
            v.sort()
            med, p10, p90 = v[len(v) // 2], v[len(v) // 10], v[9 * len(v) // 10]
            row[name] = {"median_us": med, "p10_us": p10, "p90_us": p90, "count": len(v)}
            print("2^%d %-22s median %9.3f us  p10 %9.3f  p90 %9.3f" % (log2n, name, med, p10, p90), flush=True)
        base = row["stream"]["median_us"]
        print("2^%d graph_inner / stream = %.3f; graph_inner - stream = %+.3f us" %
              (log2n, row["graph_inner"]["median_us"] / base, row["graph_inner"]["median_us"] - base), flush=True)
        results["sizes"]["2^%d" % log2n] = row
    if out_json:
        with open(out_json, "w") as f:
            json.dump(results, f, indent=1)
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
