#!/usr/bin/env python3
"""triton.testing.do_bench on a kqual candidate's own kernel (issue 13, bench/fidelity.sh).

The candidate's source is compiled by nvcc to a cubin (with an explicit instantiation of the
template), loaded with the driver API through ctypes on PyTorch's context and stream, checked once
against PyTorch, and timed by do_bench (CUDA events around each call, its L2 policy: zeroing a
256 MB buffer before every call, i.e. a write flush). Prints one JSON line.

  python3 bench/fidelity-dobench.py add_relu N | gemm M N K   (needs a GPU, nvcc, PyTorch, Triton)
"""
import ctypes
import json
import os
import re
import subprocess
import sys
import tempfile

import torch
import triton

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KERNELS = {
    "add_relu": ("candidates/residual_add_relu/good/kernel.cu",
                 "template __global__ void add_relu_vec<float>(const float*, const float*, float*, long long);",
                 rb"_Z\w*add_relu_vecIfE\w*"),
    "gemm": ("candidates/gemm/good/kernel.cu",
             "template __global__ void gemm_128x128<float>(const float*, const float*, float*, int, int, int);",
             rb"_Z\w*gemm_128x128IfE\w*"),
}


def check(r, what):
    if r != 0:
        raise RuntimeError(f"{what} failed: CUresult {r}")


def main():
    kind = sys.argv[1]
    src, inst, sym_re = KERNELS[kind]
    tmp = tempfile.mkdtemp(prefix="kqual-dobench-")
    wrapper = os.path.join(tmp, "k.cu")
    with open(wrapper, "w") as f:
        f.write(f'#include "{os.path.join(ROOT, src)}"\n{inst}\n')
    cubin = os.path.join(tmp, "k.cubin")
    nvcc = os.environ.get("NVCC", "nvcc")
    subprocess.run([nvcc, "-cubin", "-arch=sm_90", "-O3", "-o", cubin, wrapper], check=True)
    data = open(cubin, "rb").read()
    name = re.search(sym_re, data).group(0)

    torch.cuda.init()
    dev = torch.device("cuda")
    sms = torch.cuda.get_device_properties(dev).multi_processor_count
    cu = ctypes.CDLL("libcuda.so.1")
    mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
    torch.zeros(1, device=dev)  # the primary context is current from here on
    check(cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(data)), "cuModuleLoadData")
    check(cu.cuModuleGetFunction(ctypes.byref(fn), mod, ctypes.c_char_p(name)), "cuModuleGetFunction")

    if kind == "add_relu":
        n = int(sys.argv[2])
        x, r = torch.randn(n, device=dev), torch.randn(n, device=dev)
        y = torch.empty(n, device=dev)
        params = [ctypes.c_uint64(x.data_ptr()), ctypes.c_uint64(r.data_ptr()), ctypes.c_uint64(y.data_ptr()),
                  ctypes.c_longlong(n)]
        grid = (max(1, min((n + 1023) // 1024, sms * 64)), 1, 1)
        expected = lambda: torch.relu(x + r)
        out, tol = y, 0.0
        shape = f"n={n}"
    else:
        m, n, k = (int(v) for v in sys.argv[2:5])
        a, b = torch.randn(m, k, device=dev), torch.randn(k, n, device=dev)
        c = torch.empty(m, n, device=dev)
        params = [ctypes.c_uint64(a.data_ptr()), ctypes.c_uint64(b.data_ptr()), ctypes.c_uint64(c.data_ptr()),
                  ctypes.c_int(m), ctypes.c_int(n), ctypes.c_int(k)]
        grid = ((n + 127) // 128, (m + 127) // 128, 1)
        torch.backends.cuda.matmul.allow_tf32 = False
        expected = lambda: a @ b
        out, tol = c, 1e-3 * k ** 0.5
        shape = f"m={m},n={n},k={k}"
    arr = (ctypes.c_void_p * len(params))(*[ctypes.cast(ctypes.byref(p), ctypes.c_void_p) for p in params])

    def launch():
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        check(cu.cuLaunchKernel(fn, grid[0], grid[1], grid[2], 256, 1, 1, 0, stream, arr, None), "cuLaunchKernel")

    launch()
    torch.cuda.synchronize()
    err = (out - expected()).abs().max().item()
    if err > tol:
        raise RuntimeError(f"{kind}: the nvcc build's output differs from PyTorch by {err}")
    ms = triton.testing.do_bench(launch, warmup=25, rep=300, return_mode="median")
    print(json.dumps({"kernel": kind, "shape": shape, "symbol": name.decode(), "do_bench_median_ms": ms,
                      "max_abs_err": err, "triton": triton.__version__}))


if __name__ == "__main__":
    main()
