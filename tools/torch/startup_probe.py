#!/usr/bin/env python3
"""One PyTorch first request in this fresh process (kqual startup --torch; docs/upgrade.md).

kqual re-runs this script in a new process per sample, in a pinned environment, and reads the one JSON
line it prints last. Phases [ms], each timed with CLOCK_MONOTONIC (the parent's clock at spawn comes in
--spawn-ns, so the interpreter's own start is measured too):

  process_start  spawn -> this script's first line (exec, the interpreter's start-up)
  import_torch   import torch (and torch.nn.functional)
  context        CUDA initialisation and the primary context: torch.cuda.init, a first allocation, synchronize
  first_matmul   the first matmul at --matmul M,N,K (cuBLAS/cuBLASLt handle, lazy module loading, heuristics)
  first_conv     the first conv2d at --conv N,C,H,W,K,R (cuDNN handle, lazy loading, algorithm choice)
  steady_matmul / steady_conv   medians of --steady further calls, each synchronized
  first_request  import_torch + context + first_matmul + first_conv: what a fresh process pays for its first step
  warm_step      steady_matmul + steady_conv: the same step in a warm process

Inputs are made before the step that uses them (allocation is not the library's cost). What ran is
reported after every timed phase: torch's and CUDA's versions, cuDNN's, and the CUDA library files
this process mapped (from /proc/self/maps).
"""
import time

T_MAIN = time.clock_gettime_ns(time.CLOCK_MONOTONIC)

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402


def ms_since(t0):
    return (time.clock_gettime_ns(time.CLOCK_MONOTONIC) - t0) * 1e-6


def ints(text, n, what):
    parts = text.split(",")
    if len(parts) != n or not all(p.strip().isdigit() and int(p) > 0 for p in parts):
        raise ValueError(f"--{what} '{text}' is not {n} positive integers separated by commas")
    return [int(p) for p in parts]


def mapped_libraries():
    names = ("cublas", "cudnn", "cudart", "nvrtc", "nvJitLink", "libcuda.so")
    seen = []
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1] if len(line.split()) >= 6 else ""
                if path.startswith("/") and any(n in path for n in names) and path not in seen:
                    seen.append(path)
    except OSError:
        pass
    return seen


def run(a):
    out = {"ok": False, "kind": "torch", "no_gpu": False}
    phases = {}
    if a.spawn_ns > 0:
        phases["process_start"] = (T_MAIN - a.spawn_ns) * 1e-6
    m, n, k = ints(a.matmul, 3, "matmul")
    cn, cc, ch, cw, ck, cr = ints(a.conv, 6, "conv")

    t = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        out["no_torch"] = True
        out["error"] = f"PyTorch is not importable by {sys.executable}: {e}"
        return out
    phases["import_torch"] = ms_since(t)
    if not torch.cuda.is_available():
        out["no_gpu"] = True
        out["error"] = "torch.cuda.is_available() is False (no GPU, or a CPU-only PyTorch)"
        return out
    dtype = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}.get(a.dtype)
    if dtype is None:
        raise ValueError(f"--dtype '{a.dtype}' is not f32, bf16 or f16")
    if a.dtype == "f32":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False

    t = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    torch.cuda.init()
    torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    phases["context"] = ms_since(t)

    dev = torch.device("cuda")
    a_m = torch.randn(m, k, device=dev, dtype=dtype)
    b_m = torch.randn(k, n, device=dev, dtype=dtype)
    x = torch.randn(cn, cc, ch, cw, device=dev, dtype=dtype)
    w = torch.randn(ck, cc, cr, cr, device=dev, dtype=dtype)
    torch.cuda.synchronize()

    def timed(fn):
        t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        fn()
        torch.cuda.synchronize()
        return ms_since(t0)

    matmul = lambda: torch.matmul(a_m, b_m)  # noqa: E731
    conv = lambda: F.conv2d(x, w, padding=cr // 2)  # noqa: E731
    phases["first_matmul"] = timed(matmul)
    phases["first_conv"] = timed(conv)
    steady_m = sorted(timed(matmul) for _ in range(a.steady))
    steady_c = sorted(timed(conv) for _ in range(a.steady))
    phases["steady_matmul"] = steady_m[len(steady_m) // 2]
    phases["steady_conv"] = steady_c[len(steady_c) // 2]
    phases["first_request"] = phases["import_torch"] + phases["context"] + phases["first_matmul"] + phases["first_conv"]
    phases["warm_step"] = phases["steady_matmul"] + phases["steady_conv"]

    props = torch.cuda.get_device_properties(0)
    out["device"] = {"name": props.name, "arch": f"sm_{props.major}{props.minor}"}
    out["versions"] = {"torch": torch.__version__, "cuda": torch.version.cuda,
                       "cudnn": torch.backends.cudnn.version(), "python": sys.version.split()[0]}
    out["mapped"] = mapped_libraries()
    out["phases"] = phases
    out["ok"] = True
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--matmul", default="4096,4096,4096", help="M,N,K")
    p.add_argument("--conv", default="32,64,56,56,64,3", help="N,C,H,W,K,R (R x R filter, same padding)")
    p.add_argument("--dtype", default="bf16")
    p.add_argument("--steady", type=int, default=20)
    p.add_argument("--spawn-ns", type=int, default=0)
    a = p.parse_args()
    try:
        out = run(a)
    except Exception as e:  # every failure is a result line, named
        out = {"ok": False, "kind": "torch", "no_gpu": False, "error": f"{type(e).__name__}: {e}"}
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
    return 0 if out["ok"] else (3 if out.get("no_gpu") or out.get("no_torch") else 1)


if __name__ == "__main__":
    sys.exit(main())
