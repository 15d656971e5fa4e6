#!/usr/bin/env python3
"""Where does event timing differ from the kernel's own duration? (issue 13, item 1)

One bandwidth-bound kernel (y = relu(x + r), Triton, n = 2^28 f32 by default) timed under several
conditions in one process. For every launch we keep both the CUDA-event interval around it and the
kernel's GPU start/end from CUPTI activity records (through torch.profiler), so the gap between
"what the events see" and "what the kernel took" is measured on the same launches, and the kernel's
own duration can be compared across flush policies:

  warm        no flush, one launch between the events
  write       memset of 2x L2 before each launch (kqual's default, Triton's do_bench policy)
  clean       the memset, then a read pass over the same buffer (dirty lines written back first)
  write_idle  write, then 2 ms of host sleep before the launch (the GPU idles: clock ramp?)
  batch10     no flush, 10 launches between one pair of events (per-launch time = interval / 10)

Also triton.testing.do_bench on the same kernel (its L2 policy: zero a 256 MB buffer). ncu runs the
same script with KQUAL_PROBE_ONLY=write (see scripts/device-run, step 'fidelity').

  python3 bench/timing-probe.py [OUT.json]       (needs a GPU, PyTorch and Triton)
"""
import json
import os
import statistics
import sys
import time

import torch
import triton
import triton.language as tl


@triton.jit
def add_relu(x_ptr, r_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, eviction_policy="evict_first")
    r = tl.load(r_ptr + offs, mask=m, eviction_policy="evict_first")
    tl.store(y_ptr + offs, tl.maximum(x + r, 0.0), mask=m)


@triton.jit
def read_pass(p_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(p_ptr + offs, mask=offs < n, other=0)
    s = tl.sum(v, axis=0)
    # never true for the memset's value; keeps the loads alive
    if s == 123456789:
        tl.store(out_ptr, s)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "timing-probe.json"
    n = int(os.environ.get("KQUAL_PROBE_N", 1 << 28))
    samples = int(os.environ.get("KQUAL_PROBE_SAMPLES", 30))
    only = os.environ.get("KQUAL_PROBE_ONLY", "")
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)
    l2 = getattr(props, "L2_cache_size", 50 << 20)
    x = torch.randn(n, device=dev)
    r = torch.randn(n, device=dev)
    y = torch.empty(n, device=dev)
    flush = torch.empty(2 * l2 // 4, dtype=torch.int32, device=dev)
    sink = torch.zeros(1, dtype=torch.int32, device=dev)
    BLOCK = 4096
    grid = (triton.cdiv(n, BLOCK),)

    def kernel():
        add_relu[grid](x, r, y, n, BLOCK=BLOCK)

    def clean_read():
        read_pass[(triton.cdiv(flush.numel(), BLOCK),)](flush, sink, flush.numel(), BLOCK=BLOCK)

    kernel(); clean_read(); torch.cuda.synchronize()
    assert torch.equal(y, torch.relu(x + r))

    def run(mode):
        ev = []
        for i in range(samples + 3):
            if mode in ("write", "clean", "write_idle"):
                flush.fill_(i)
            if mode == "clean":
                clean_read()
            if mode == "write_idle":
                torch.cuda.synchronize()
                time.sleep(0.002)
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(10 if mode == "batch10" else 1):
                kernel()
            e.record()
            e.synchronize()
            ev.append(s.elapsed_time(e) / (10 if mode == "batch10" else 1))
        return ev[3:]

    modes = ["warm", "write", "clean", "write_idle", "batch10"]
    if only:
        modes = [m for m in modes if m in only.split(",")]
    result = {"device": props.name, "n": n, "samples": samples, "torch": torch.__version__,
              "triton": triton.__version__, "modes": {}}
    for mode in modes:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            ev = run(mode)
            torch.cuda.synchronize()
        kd = [e.device_time for e in prof.events() if "add_relu" in e.name and e.device_time > 0]
        k = kd[-samples * (10 if mode == "batch10" else 1):]
        k_ms = [v / 1e3 for v in k]  # device_time is in us
        row = {"event_median_ms": statistics.median(ev), "event_min_ms": min(ev),
               "cupti_kernel_median_ms": statistics.median(k_ms) if k_ms else None,
               "cupti_kernel_min_ms": min(k_ms) if k_ms else None, "cupti_records": len(kd),
               "event_ms": ev}
        if k_ms:
            row["event_over_cupti"] = row["event_median_ms"] / row["cupti_kernel_median_ms"]
        result["modes"][mode] = row
        print(f"{mode:10s} events median {row['event_median_ms']:.4f} ms  CUPTI kernel median "
              f"{row['cupti_kernel_median_ms'] or float('nan'):.4f} ms  ratio {row.get('event_over_cupti', float('nan')):.4f}",
              flush=True)
    if not only:
        try:
            ms = triton.testing.do_bench(kernel, warmup=25, rep=200, return_mode="median")
            result["triton_do_bench_median_ms"] = ms
            print(f"triton.testing.do_bench (median, zero 256 MB between calls): {ms:.4f} ms", flush=True)
        except Exception as exc:  # report, don't hide
            result["triton_do_bench_error"] = repr(exc)
    with open(out, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
