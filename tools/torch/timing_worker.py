#!/usr/bin/env python3
"""kqual's PyTorch timing worker: the eager and torch.compile baselines of a contract whose reference
is a PyTorch function (src/bench/torch_baseline.cpp starts it; docs/kernelbench.md, "PyTorch baselines").

Usage: timing_worker.py CONFIG_JSON   with CONFIG {"file": reference.py, "function": name}
Protocol: one JSON line answered per JSON line on stdin; the first line out is the hello
({"ok": true, "torch": ..., "device": ..., "l2_bytes": ..., "clocks": ...} or {"ok": false, "code":
"no_torch" | "no_cuda" | "import_failed", "error": ...}).

Timing rules, as kqual's own worker keeps them (src/bench/timing.cpp):
  - CUDA events recorded on the current stream right before and after the call; nothing else is
    enqueued in between (the call itself allocates its output, as PyTorch code does);
  - L2 flush before every sample, outside the events: "write" overwrites a 2x-L2 buffer, "clean" then
    reads it back so its dirty lines are written back before the timed window, "none" keeps L2 warm;
    "invalidate" (PTX discard.global.L2) has no PyTorch equivalent and is refused by name;
  - warm-up calls excluded and reported; the first call of torch.compile at a shape (compilation) is
    timed apart, on the host clock, as a startup cost;
  - samples alternate between the two datasets (files A and B written by kqual, the same values its
    native timing uses);
  - clock guard through pynvml where it is importable: the SM clock read after each sample, a sample
    below 90 % of the default clock or under a power/thermal slowdown discarded (and the worker backs
    off 50 ms); without pynvml the clocks are not read, and the reply says so.
"""
import importlib.util
import inspect
import json
import sys
import time
import traceback


def reply(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def exc_text(e):
    return "".join(traceback.format_exception_only(type(e), e)).strip()


cfg = json.loads(sys.argv[1])
try:
    import numpy as np
    import torch
except Exception as e:
    reply({"ok": False, "code": "no_torch", "error": "torch not importable with %s: %s" % (sys.executable, exc_text(e))})
    sys.exit(0)
if not torch.cuda.is_available():
    reply({"ok": False, "code": "no_cuda", "error": "torch %s sees no CUDA device" % torch.__version__})
    sys.exit(0)
try:
    spec = importlib.util.spec_from_file_location("kqual_torch_reference", cfg["file"])
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    fn = getattr(mod, cfg["function"])
    params = inspect.signature(fn).parameters
    var_kw = any(p.kind == p.VAR_KEYWORD for p in params.values())
except BaseException as e:
    reply({"ok": False, "code": "import_failed", "error": "%s:%s: %s" % (cfg["file"], cfg["function"], exc_text(e))})
    sys.exit(0)

dev = torch.device("cuda")
props = torch.cuda.get_device_properties(dev)
l2_bytes = int(getattr(props, "L2_cache_size", 0) or 0)
l2_note = ""
if l2_bytes <= 0:
    l2_bytes = 64 << 20
    l2_note = "L2 size not reported by this torch: 64 MiB assumed"
flush_buf = torch.empty(2 * l2_bytes, dtype=torch.uint8, device=dev)

nvml = None
clocks_note = ""
try:
    import pynvml
    pynvml.nvmlInit()
    handle = None
    uuid = getattr(props, "uuid", None)
    if uuid is not None:
        try:
            handle = pynvml.nvmlDeviceGetHandleByUUID(("GPU-" + str(uuid)).encode())
        except Exception:
            handle = None
    if handle is None:
        handle = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
    try:
        ref_mhz = pynvml.nvmlDeviceGetDefaultApplicationsClock(handle, pynvml.NVML_CLOCK_SM)
    except Exception:
        ref_mhz = pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM)
    slow_mask = 0
    for name, bit in (("nvmlClocksThrottleReasonSwPowerCap", 0x4), ("nvmlClocksThrottleReasonHwSlowdown", 0x8),
                      ("nvmlClocksThrottleReasonSwThermalSlowdown", 0x20), ("nvmlClocksThrottleReasonHwThermalSlowdown", 0x40),
                      ("nvmlClocksThrottleReasonHwPowerBrakeSlowdown", 0x80)):
        slow_mask |= getattr(pynvml, name, bit)
    nvml = (pynvml, handle, ref_mhz, slow_mask)
except Exception as e:
    clocks_note = "clocks not read: pynvml %s (%s)" % ("not importable" if isinstance(e, ImportError) else "failed", exc_text(e))

DT = {"f32": torch.float32, "f64": torch.float64, "bf16": torch.bfloat16, "i32": torch.int32, "i64": torch.int64}
compiled_fn = None
compiled_shapes = set()
cache = {}


def load(file, dtype, shape):
    key = (file, dtype, tuple(shape))
    if key not in cache:
        if len(cache) > 16:
            cache.clear()
        raw = torch.from_numpy(np.fromfile(file, dtype=np.uint8))
        cache[key] = raw.view(DT[dtype]).reshape(shape).to(dev)
    return cache[key]


def arguments(r, d):
    kw = {name: load(t["files"][d], t["dtype"], t["shape"]) for name, t in r["inputs"].items()}
    kw.update(r["scalars"])
    kw.update(r["axes"])
    if not var_kw:
        kw = {k: v for k, v in kw.items() if k in params}
    return kw


def outputs(out, names):
    if isinstance(out, dict):
        return [out[n] for n in names]
    if isinstance(out, (tuple, list)):
        return list(out)
    return [out]


def flush(mode, k):
    if mode == "none":
        return
    flush_buf.fill_(k & 0xFF)
    if mode == "clean":
        torch.sum(flush_buf.view(torch.int32), dtype=torch.int64)


def clock_check():
    if nvml is None:
        return None, None, None, 0
    pynvml, h, ref, mask = nvml
    sm = pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)
    mem = pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM)
    try:
        reasons = pynvml.nvmlDeviceGetCurrentClocksThrottleReasons(h) & mask
    except Exception:
        reasons = 0
    try:
        temp = pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU)
    except Exception:
        temp = 0
    bad = None
    if sm < 0.9 * ref:
        bad = "SM clock %d MHz below 90 %% of %d MHz" % (sm, ref)
    elif reasons:
        bad = "slowdown reasons 0x%x" % reasons
    return sm, mem, bad, temp


def time_call(r):
    global compiled_fn
    if r.get("flush", "write") == "invalidate":
        return {"ok": False, "code": "flush_mode",
                "error": "L2 flush mode invalidate (PTX discard.global.L2) has no PyTorch equivalent: time with --l2-flush write, clean or none"}
    impl = r["impl"]
    if impl == "compiled":
        if compiled_fn is None:
            compiled_fn = torch.compile(fn, dynamic=False)
        call = compiled_fn
    elif impl == "eager":
        call = fn
    else:
        return {"ok": False, "code": "usage", "error": "unknown implementation %r (eager, compiled)" % impl}
    kws = [arguments(r, 0), arguments(r, 1)]
    res = {"ok": True, "samples_ms": [], "warmup_ms": [], "datasets": [], "sm_mhz": [], "mem_mhz": [], "discarded": 0,
           "clock_events": [], "guard_exhausted": False, "clocks_note": clocks_note or l2_note,
           "reference_sm_mhz": nvml[2] if nvml else 0, "max_temperature_c": 0}
    shape_key = json.dumps(r["axes"], sort_keys=True)
    if impl == "compiled" and shape_key not in compiled_shapes:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        call(**kws[0])
        torch.cuda.synchronize()
        res["compile_s"] = time.perf_counter() - t0
        compiled_shapes.add(shape_key)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    k = 0
    for i in range(int(r["warmup"])):
        flush(r.get("flush", "write"), k)
        k += 1
        start.record()
        call(**kws[i % 2])
        end.record()
        end.synchronize()
        res["warmup_ms"].append(start.elapsed_time(end))
    want = int(r["samples"])
    attempts = 0
    while len(res["samples_ms"]) < want:
        d = attempts % 2
        attempts += 1
        flush(r.get("flush", "write"), k)
        k += 1
        start.record()
        call(**kws[d])
        end.record()
        end.synchronize()
        ms = start.elapsed_time(end)
        if r.get("clock_guard", True) and nvml is not None:
            sm, mem, bad, temp = clock_check()
            res["max_temperature_c"] = max(res["max_temperature_c"], temp)
            if bad and not res["guard_exhausted"]:
                res["discarded"] += 1
                if len(res["clock_events"]) < 20:
                    res["clock_events"].append("sample %d discarded: %s" % (attempts, bad))
                if res["discarded"] >= 3 * want:
                    res["guard_exhausted"] = True
                time.sleep(0.05)
                continue
            res["sm_mhz"].append(sm)
            res["mem_mhz"].append(mem)
        res["samples_ms"].append(ms)
        res["datasets"].append(d)
    if r.get("write_outputs"):
        names = [o["name"] for o in r["outputs"]]
        for d in (0, 1):
            outs = outputs(call(**kws[d]), names)
            if len(outs) != len(names):
                return {"ok": False, "code": "outputs", "error": "returned %d outputs, expected %d" % (len(outs), len(names))}
            for o, t in zip(r["outputs"], outs):
                t = torch.as_tensor(t).to(DT[o["dtype"]]).contiguous().reshape(-1)
                t.cpu().view(torch.uint8).numpy().tofile(o["files"][d])
    return res


reply({"ok": True, "torch": torch.__version__, "device": props.name, "l2_bytes": l2_bytes,
       "clocks": "nvml" if nvml else clocks_note})
for line in sys.stdin:
    try:
        reply(time_call(json.loads(line)))
    except BaseException as e:
        reply({"ok": False, "code": "raised", "error": exc_text(e), "trace": traceback.format_exc(limit=6)})
