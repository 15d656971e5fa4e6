#!/usr/bin/env python3
"""kqual's PyTorch timing worker: the torch_eager and torch_compiled baselines (src/bench/torch_baseline*.cpp
start it; docs/kernelbench.md, "PyTorch baselines"), and the fidelity path that times a candidate's own
cubin the way the baselines are timed.

Usage: timing_worker.py [CONFIG_JSON]   CONFIG: {"file": reference.py, "function": name} for a declared
contract's PyTorch reference (absent for the built-in contracts), "compile_mode": "default" or
"max-autotune-no-cudagraphs" (torch.compile's mode; the modes with Inductor's own CUDA graphs are
refused: the worker captures its own graph).

Protocol: one JSON line answered per JSON line on stdin. The first line out is the hello
({"ok": true, "torch", "device", "l2_bytes", "clocks", "compile_mode", "precision", "builtins"} or
{"ok": false, "code": "no_torch" | "no_cuda" | "import_failed" | "usage", "error"}). A request:
  impl        "eager", "compiled" or "cubin" (the candidate's module, "cubin": {module, kernel, grid,
              block, shared, args: [{tensor} | {value, bytes}]}: kqual_cubin.py)
  builtin     the built-in contract's name (kqual_torch_ops.OPS); absent: the configured reference
  inputs      {name: {files: [A, B], dtype, shape}}   the two datasets kqual wrote
  outputs     [{name, dtype, shape, files: [A, B]}]    where write_outputs puts them
  scalars, axes (references only), flush ("write" | "clean" | "none"), clock_guard, samples, warmup,
  write_outputs, measure_direct (also time the call without a graph: the Python overhead), window
              ("eager_call": no CUDA graph, the call itself timed, as a PyTorch submission that cannot be
              captured is timed; absent: a graph where the call can be captured)
The reply: samples_ms (graph replays: only the operation's kernels; kqual_torch_timing.py), warmup_ms,
datasets, clocks, "window" ("cuda_graph"; "cuda_graph_outer_events" where events cannot be recorded
inside the graph; "eager_call" when the call cannot be captured, "notes" say why), "expression",
"compile_s" (torch.compile's first call at a shape, host clock), and with measure_direct the overhead
fields (direct_ms, graph_ms, overhead_ms, direct_host_us, replay_host_us, overhead_host_us).
"""
import importlib.util
import inspect
import json
import os
import sys
import time
import traceback


def reply(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def exc_text(e):
    return "".join(traceback.format_exception_only(type(e), e)).strip()


COMPILE_MODES = ("default", "max-autotune-no-cudagraphs")
FLUSH_MODES = ("write", "clean", "none")

cfg = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
try:
    import numpy as np
    import torch
except Exception as e:
    reply({"ok": False, "code": "no_torch", "error": "torch not importable with %s: %s" % (sys.executable, exc_text(e))})
    sys.exit(0)
if not torch.cuda.is_available():
    reply({"ok": False, "code": "no_cuda", "error": "torch %s sees no CUDA device" % torch.__version__})
    sys.exit(0)
compile_mode = cfg.get("compile_mode", "default")
if compile_mode not in COMPILE_MODES:
    reply({"ok": False, "code": "usage", "error": "compile mode %r: one of %s (modes with Inductor's own CUDA graphs would "
                                                  "nest in the worker's)" % (compile_mode, ", ".join(COMPILE_MODES))})
    sys.exit(0)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import kqual_cubin
    from kqual_torch_ops import OPS, check_request
    from kqual_torch_timing import Clocks, Flusher, Recorder, capture_graph, overhead, sample
except BaseException as e:
    reply({"ok": False, "code": "import_failed", "error": "the worker's own modules: %s" % exc_text(e)})
    sys.exit(0)

reference = None  # (function, its parameters, whether it takes **kwargs)
if cfg.get("file"):
    try:
        spec = importlib.util.spec_from_file_location("kqual_torch_reference", cfg["file"])
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        fn = getattr(mod, cfg["function"])
        params = inspect.signature(fn).parameters
        reference = (fn, params, any(p.kind == p.VAR_KEYWORD for p in params.values()))
    except BaseException as e:
        reply({"ok": False, "code": "import_failed", "error": "%s:%s: %s" % (cfg["file"], cfg.get("function"), exc_text(e))})
        sys.exit(0)


def precision_settings():
    """What the contracts' numerical policies require of PyTorch's matmul: f32 products and sums in
    IEEE f32 (gemm: no TF32), bf16 and f16 accumulated in f32 (no reduced-precision reductions)."""
    said, m = [], torch.backends.cuda.matmul
    try:
        if hasattr(m, "fp32_precision"):  # the API of torch >= 2.9; the legacy flag warns there
            m.fp32_precision = "ieee"
        else:
            m.allow_tf32 = False
        said.append("f32 matmul in IEEE f32 (TF32 off)")
    except Exception as e:
        said.append("f32 matmul precision NOT set (%s)" % exc_text(e))
    try:
        m.allow_bf16_reduced_precision_reduction = False
        said.append("bf16 matmul reductions in f32")
    except Exception as e:
        said.append("bf16 reduced-precision reductions NOT turned off (%s)" % exc_text(e))
    try:
        m.allow_fp16_reduced_precision_reduction = False
        said.append("f16 matmul reductions in f32")
    except Exception as e:
        said.append("f16 reduced-precision reductions NOT turned off (%s)" % exc_text(e))
    return "; ".join(said)


precision = precision_settings()
dev = torch.device("cuda")
props = torch.cuda.get_device_properties(dev)
recorder = Recorder()  # kqual's recorder, when kqual injected it (CUDA is initialised by now)
l2_bytes = int(getattr(props, "L2_cache_size", 0) or 0)
l2_note = ""
if l2_bytes <= 0:
    l2_bytes = 64 << 20
    l2_note = "L2 size not reported by this torch: 64 MiB assumed"
flush = Flusher(dev, l2_bytes)
clocks = Clocks(props)
try:
    import torch._dynamo
    torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 64)  # one graph per shape
except Exception:
    pass

DT = {"f32": torch.float32, "f64": torch.float64, "bf16": torch.bfloat16, "f16": torch.float16, "i32": torch.int32,
      "i64": torch.int64, "i8": torch.int8, "u8": torch.uint8}
loaded = {}    # (file, dtype, shape) -> the dataset's tensor on the device
states = {}    # (impl, shape key) -> State
compiled = {}  # the op's key -> torch.compile of it (dynamo keeps one graph per shape)
current = [None]


def load(t, d):
    if t["dtype"] not in DT:
        raise ValueError("dtype %s has no torch dtype here (%s)" % (t["dtype"], ", ".join(DT)))
    key = (t["files"][d], t["dtype"], tuple(t["shape"]))
    if key not in loaded:
        raw = torch.from_numpy(np.fromfile(t["files"][d], dtype=np.uint8))
        loaded[key] = raw.view(DT[t["dtype"]]).reshape(t["shape"]).to(dev)
    return loaded[key]


def poisoned(o):
    t = torch.empty(o["shape"], dtype=DT[o["dtype"]], device=dev)
    t.view(torch.uint8).fill_(0xFF)  # as kqual poisons outputs: an element never written cannot look right
    return t


def as_list(out, names):
    if isinstance(out, dict):
        return [out[n] for n in names]
    if isinstance(out, (tuple, list)):
        return list(out)
    return [out]


class State:
    """One implementation at one shape: the call per dataset, its CUDA graphs (or why there are none),
    torch.compile's first-call time."""

    def __init__(self, r, impl):
        names = [o["name"] for o in r["outputs"]]
        ins = [{n: load(t, d) for n, t in r["inputs"].items()} for d in (0, 1)]
        self.compile_s, self.notes, self.expression = None, [], ""
        if impl == "cubin":
            k = kqual_cubin.CubinLaunch(r["cubin"])
            outs = [{o["name"]: poisoned(o) for o in r["outputs"]} for d in (0, 1)]
            self.direct = [k.bind(dict(ins[d], **outs[d]), names) for d in (0, 1)]
            self.expression = k.text
        elif r.get("builtin"):
            op = check_request(r["builtin"], r["inputs"], r["outputs"])
            args = [[ins[d][n] for n in op.inputs] for d in (0, 1)]
            self.direct = self.builtin_calls(op, impl, args, r)
        else:
            if reference is None:
                raise ValueError("a request without 'builtin' needs the worker started with a reference (CONFIG file, function)")
            fn, params, var_kw = reference
            kws = []
            for d in (0, 1):
                kw = dict(ins[d], **r.get("scalars", {}))
                kw.update(r.get("axes", {}))
                kws.append(kw if var_kw else {k: v for k, v in kw.items() if k in params})
            call = fn if impl == "eager" else self.compiled_fn(("reference", cfg["file"], cfg["function"]), fn)
            self.direct = [(lambda kw=kws[d]: as_list(call(**kw), names)) for d in (0, 1)]
            self.expression = "%s:%s" % (os.path.basename(cfg["file"]), cfg["function"])
        if impl == "compiled":
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            self.direct[0]()
            torch.cuda.synchronize()
            self.compile_s = time.perf_counter() - t0
        try:
            if r.get("window") == "eager_call":  # timed as a submission that cannot be captured is: the same window
                raise RuntimeError("the request asked for the call itself in the window (window eager_call)")
            self.graphs = [capture_graph(self.direct[d]) for d in (0, 1)]
            # A run returns the graph's inner timing events (kqual_torch_timing.timed); its outputs stay in self.outs.
            self.runs = [(lambda g=g, ev=ev: (g.replay(), ev)[1]) for g, _, ev in self.graphs]
            self.outs = [o for _, o, _ in self.graphs]
            self.window = "cuda_graph" if all(ev for _, _, ev in self.graphs) else "cuda_graph_outer_events"
        except Exception as e:
            torch.cuda.synchronize()
            self.graphs, self.window = None, "eager_call"
            self.runs = [(lambda call=call: (call(), None)[1]) for call in self.direct]
            self.outs = None
            self.notes.append("timed with dispatch and allocation in the window: the call could not be captured in a CUDA "
                              "graph (%s)" % exc_text(e)[:300])

    def compiled_fn(self, key, fn):
        if key not in compiled:
            compiled[key] = torch.compile(fn, dynamic=False, mode=None if compile_mode == "default" else compile_mode)
        return compiled[key]

    def builtin_calls(self, op, impl, args, r):
        if impl == "compiled":
            cfn = self.compiled_fn(("builtin", r["builtin"]), op.fn)
            self.expression = "torch.compile(%s, mode=%s)" % (op.text, compile_mode)
            return [(lambda a=args[d]: as_list(cfn(*a), op.outputs)) for d in (0, 1)]
        self.expression = op.text
        if op.out_fn is not None:
            outs = [[poisoned(o) for o in r["outputs"]] for d in (0, 1)]
            try:
                op.out_fn(*args[0], *outs[0])
                torch.cuda.synchronize()
                self.expression += " (into preallocated outputs)"
                return [(lambda a=args[d], o=outs[d]: (op.out_fn(*a, *o), o)[1]) for d in (0, 1)]
            except Exception as e:
                self.notes.append("no out= form on this torch (%s): the graph holds the op's own allocation" % exc_text(e)[:200])
        return [(lambda a=args[d]: as_list(op.fn(*a), op.outputs)) for d in (0, 1)]


def write_outputs(st, r):
    for d in (0, 1):
        if st.outs is not None:
            st.runs[d]()
            outs = st.outs[d]
        else:
            outs = st.direct[d]()
        torch.cuda.synchronize()
        if len(outs) != len(r["outputs"]):
            raise ValueError("returned %d outputs, expected %d" % (len(outs), len(r["outputs"])))
        for o, t in zip(r["outputs"], outs):
            t = torch.as_tensor(t)
            want = 1
            for v in o["shape"]:
                want *= int(v)
            if t.numel() != want:
                raise ValueError("output %r has %d elements, the contract's shape %s has %d" % (o["name"], t.numel(), o["shape"], want))
            t.to(DT[o["dtype"]]).contiguous().reshape(-1).cpu().view(torch.uint8).numpy().tofile(o["files"][d])


def checked(r):
    """The request's problems, named (None when it can run)."""
    for key in ("impl", "inputs", "outputs", "samples", "warmup"):
        if key not in r:
            return "request without %r" % key
    if r.get("flush", "write") == "invalidate":
        return ("flush_mode", "L2 flush mode invalidate (PTX discard.global.L2) has no PyTorch equivalent: time with "
                              "--l2-flush write, clean or none")
    if r.get("flush", "write") not in FLUSH_MODES:
        return "flush mode %r: one of %s" % (r.get("flush"), ", ".join(FLUSH_MODES))
    if r["impl"] not in ("eager", "compiled", "cubin"):
        return "unknown implementation %r (eager, compiled, cubin)" % r["impl"]
    if r["impl"] == "cubin" and "cubin" not in r:
        return "impl cubin without the 'cubin' launch"
    if int(r["samples"]) < 1 or int(r["warmup"]) < 0:
        return "samples %s, warmup %s: at least one sample, no negative warm-up" % (r["samples"], r["warmup"])
    return None


def time_call(r):
    bad = checked(r)
    if bad:
        code, why = bad if isinstance(bad, tuple) else ("usage", bad)
        return {"ok": False, "code": code, "error": why}
    impl = r["impl"]
    shape = json.dumps({"op": r.get("builtin", ""), "inputs": r["inputs"], "window": r.get("window", "")}, sort_keys=True)
    if current[0] != shape:  # a new shape: what the last one held on the device goes
        states.clear()
        loaded.clear()
        torch.cuda.empty_cache()
        current[0] = shape
    fresh = impl not in states
    if fresh:
        states[impl] = State(r, impl)
    st = states[impl]
    res = {"ok": True, "samples_ms": [], "warmup_ms": [], "datasets": [], "sm_mhz": [], "mem_mhz": [], "discarded": 0,
           "clock_events": [], "guard_exhausted": False, "clocks_note": clocks.note or l2_note,
           "reference_sm_mhz": clocks.reference_mhz(), "max_temperature_c": 0, "window": st.window,
           "expression": st.expression, "notes": st.notes}
    if impl == "compiled":
        res["compile_mode"] = compile_mode
        if fresh:
            res["compile_s"] = st.compile_s
    sample(st.runs, r, res, clocks, flush, recorder=recorder if r.get("token") else None)
    if r.get("measure_direct") and st.graphs is not None:
        res.update(overhead(st.direct, st.runs, r, flush, max(2, min(int(r["samples"]), 10))))
    if r.get("write_outputs"):
        write_outputs(st, r)
    return res


reply({"ok": True, "torch": torch.__version__, "device": props.name, "l2_bytes": l2_bytes,
       "clocks": "nvml" if clocks.nvml else clocks.note, "compile_mode": compile_mode, "precision": precision,
       "builtins": sorted(OPS), "cubin": True})
for line in sys.stdin:
    r = {}
    try:
        r = json.loads(line)
        reply(time_call(r))
    except BaseException as e:
        reply({"ok": False, "code": "raised", "error": exc_text(e), "trace": traceback.format_exc(limit=6)})
    finally:
        if isinstance(r, dict) and r.get("token"):
            torch.cuda.synchronize()
            recorder.flush(r["token"])  # every sample's activity in the record, then the token
