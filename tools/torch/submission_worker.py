#!/usr/bin/env python3
"""kqual's PyTorch submission worker: runs a candidate written for PyTorch (a `ModelNew` module with
load_inline / Triton / torch.library kernels) on kqual's inputs, in a process of its own that kqual
starts per candidate and kills when a request outlives its deadline. The submission's Python and host
code run here and nowhere else; kqual judges the outputs this worker writes against its own
references, computed in another process (docs/torch-submissions.md).

Usage: submission_worker.py CONFIG_JSON
CONFIG: {"submission": file, "class": "ModelNew", "contract_dir": folder of an imported KernelBench
problem (reference.py with CONFIG, problem.py) or null, "builtin": the built-in contract's name (its
PyTorch form in kqual_torch_ops) or absent, "reference_py" and "reference_function": a declared
contract's PyTorch reference or absent, "allow_kernels": [regex], "seed": int,
"sleep_cycles": int (the spin put on the caller's stream before each checked call; default 2e7),
"stream": "own" (default: every call on a stream of kqual's, as production code calls on many) or "default"
(every call on PyTorch's default stream, as KernelBench's evaluation calls it)}

Protocol: one JSON line answered per JSON line on stdin, replies on the process's original stdout
(the submission's own prints, Python or C, go to stderr). The first line out is the hello:
{"ok": true, "torch", "device", "mode": "kernelbench" | "keywords", "replaced": [watched names the
import replaced]} or {"ok": false, "code": "no_torch" | "no_cuda" | "usage" | "submission_import" | "build_failed" |
"no_class", "error"}.

"check" {id, axes, scalars, inputs: {name: {files: [A, B], dtype, shape}}, outputs: [{name, dtype,
shape, files: [call1, call2, call3]}], deadline_s, token}: three calls at this case, each between the
recorder's marks (armed, call, returned, fenced) with a fence after it:
  1. on fresh tensors of dataset A, the caller's stream held busy first (torch.cuda._sleep): the
     output read once the caller's stream is done and again after the whole device is: bytes that
     differ were written by work the call did not join to the caller's stream; side streams still
     busy (each started with a spin twice the caller's: kqual_submission_guard.StreamTracker), and
     threads the call left running, are counted; inputs hashed before and after
  2. the same tensors refilled in place with dataset B (same data_ptr, shape and dtype, new values)
  3. fresh tensors of dataset A again (a first call that differs from later ones)
then the problem's own reference on dataset A between the marks "ref" and "ref-done".
Outputs of calls 1-3 are written to the files given. Reply {"ok": true, "calls": [{late_bytes,
pending_streams, new_threads, inputs_changed, aliases}], "reference_note", "replaced"}, then the record
flushed with the request's token (the calls' marks in it: record_judge.hpp), or
{"ok": false, "code": "exception" | "output_mismatch" | "parameters_differ" | "worker_error", "call", "error"}
("exception": what the submission raised, or a CUDA error its kernels caused; "worker_error": this
worker's own code failed, which kqual reports as its harness error, never as the submission's verdict).

"time": a request as tools/torch/timing_worker.py takes one (inputs and outputs with files [A, B],
flush, clock_guard, samples, warmup, write_outputs, window), answered as it answers (samples_ms,
warmup_ms, clocks, window "cuda_graph" or "eager_call", notes) plus "replaced" and "pending_streams":
the submission timed under the baselines' rules (kqual_torch_timing), each dataset copied into the
same static inputs before its sample, outside the window, the inputs named in "fresh" rotated by the
recorder's draw, and the calls the recorder's draws pick read back (Timed below; src/bench/timed_samples.cpp).
"""
import faulthandler
import hashlib
import importlib.util
import inspect
import json
import os
import sys
import time
import traceback

_clock = time.perf_counter  # kqual's own clock, taken before the submission can replace it

_proto = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)          # C-level prints of the submission: to stderr
sys.stdout = sys.stderr  # Python-level ones too


def reply(obj):
    _proto.write(json.dumps(obj) + "\n")
    _proto.flush()


def exc_text(e):
    return "".join(traceback.format_exception_only(type(e), e)).strip()


class Refusal(Exception):
    """What the worker names itself (code, message), as opposed to the submission's own exceptions."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def tb_tail(limit=1500):
    return traceback.format_exc()[-limit:]


class SubmissionRaised(Exception):
    """An exception the submission's own code raised: its module's construction or one of its calls.
    Anything else that fails in this worker is kqual's side (code "worker_error", a harness error),
    except a CUDA error, which the submission's kernels cause and kqual's next synchronisation reports.
    build: the compiler's first error where the exception is a failed build of its kernels."""

    def __init__(self, e):
        super().__init__(exc_text(e))
        self.tb = tb_tail()
        self.build = build_failure(e)


def submission_code(fn, *args):
    try:
        return fn(*args)
    except (Refusal, SubmissionRaised):
        raise
    except BaseException as e:  # SystemExit and KeyboardInterrupt too: the submission's doing
        raise SubmissionRaised(e) from e


def is_cuda_error(e):
    return type(e).__name__ in ("AcceleratorError", "OutOfMemoryError") or "CUDA error" in str(e) or "CUDA out of memory" in str(e)


cfg = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
if not cfg.get("submission"):
    reply({"ok": False, "code": "usage", "error": "usage: submission_worker.py CONFIG_JSON with a 'submission' file"})
    sys.exit(0)
try:
    import numpy as np
    import torch
except Exception as e:
    reply({"ok": False, "code": "no_torch", "error": "torch not importable with %s: %s" % (sys.executable, exc_text(e))})
    sys.exit(0)
if not torch.cuda.is_available():
    reply({"ok": False, "code": "no_cuda", "error": "torch %s sees no CUDA device" % torch.__version__})
    sys.exit(0)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kqual_submission_guard as guard  # noqa: E402
from kqual_torch_timing import Clocks, Flusher, Recorder, capture_graph, sample  # noqa: E402
from kqual_build_errors import build_failure  # noqa: E402
from kqual_parameters import map_parameters  # noqa: E402

DT = {"f32": torch.float32, "f64": torch.float64, "bf16": torch.bfloat16, "f16": torch.float16, "i32": torch.int32,
      "i64": torch.int64, "i8": torch.int8, "u8": torch.uint8, "bool": torch.bool,
      "e4m3": getattr(torch, "float8_e4m3fn", None), "e5m2": getattr(torch, "float8_e5m2", None)}
dev = torch.device("cuda")
torch.cuda.init()
originals = guard.Originals()  # before the submission exists


recorder = Recorder()
Event = torch.cuda.Event
# The stream every call is made on; made before the tracker is installed. "default": the legacy default
# stream, where KernelBench calls a solution (a kernel launched with <<<grid, block>>> is then ordered with it).
caller = torch.cuda.default_stream() if cfg.get("stream") == "default" else torch.cuda.Stream()
tracker = guard.StreamTracker(torch)
tracker.install()
_props = torch.cuda.get_device_properties(dev)
flusher = Flusher(dev, int(getattr(_props, "L2_cache_size", 0) or (64 << 20)))
clocks = Clocks(_props)
sleep_cycles = int(cfg.get("sleep_cycles", 20_000_000))


def load_module(name, path):
    # A submission may import modules of its own folder (a kernel shared by several files).
    folder = os.path.dirname(os.path.abspath(path))
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # torch.compile and torch.library look functions' modules up by name
    spec.loader.exec_module(mod)
    return mod


reference = None  # the imported problem's generated reference.py: CONFIG and the problem module
if cfg.get("contract_dir"):
    try:
        reference = load_module("kqual_submission_reference", os.path.join(cfg["contract_dir"], "reference.py"))
        reference._problem()
    except BaseException as e:
        reply({"ok": False, "code": "usage", "error": "the problem's contract folder %s: %s" % (cfg["contract_dir"], exc_text(e))})
        sys.exit(0)
try:
    submission = load_module("kqual_submission", cfg["submission"])
except BaseException as e:
    built = build_failure(e)
    reply({"ok": False, "code": "build_failed" if built else "submission_import",
           "error": built or "%s: %s" % (cfg["submission"], exc_text(e)), "traceback": tb_tail()})
    sys.exit(0)
cls = getattr(submission, cfg.get("class", "ModelNew"), None)
if cls is None:
    reply({"ok": False, "code": "no_class", "error": "%s defines no %s (it defines: %s)" % (
        cfg["submission"], cfg.get("class", "ModelNew"), ", ".join(n for n in dir(submission) if not n.startswith("_")))})
    sys.exit(0)
replaced_at_import = originals.replaced()

models = {}


def model_for(axes, klass=None):
    """The submission's module (or `klass`, the problem's own Model) at these axis values, built as
    the problem builds Model: the module's constants set, torch seeded, the problem's
    get_init_inputs()."""
    key = (klass is not None,) + tuple(sorted(axes.items()))
    if key in models:
        return models[key]
    init = []
    if reference is not None:
        mod = reference._problem()
        consts = reference.CONFIG.get("axes", {})
        saved = {c: getattr(mod, c) for c in consts.values()}
        try:
            for axis, const in consts.items():
                setattr(mod, const, int(axes[axis]))
            init = list(mod.get_init_inputs())
        finally:
            for c, v in saved.items():
                setattr(mod, c, v)
    torch.manual_seed(int(cfg.get("seed", 0)))
    m = (klass(*init) if klass is not None else submission_code(cls, *init)).to(dev)
    if len(models) >= 8:
        models.clear()
    models[key] = m
    return m


parameters_by_shape = []  # "problem name -> submission name" for each parameter matched by shape (said in the reply)


def caller_fn(model, r):
    """A function of one dataset's tensors that calls the submission as the problem calls Model."""
    if reference is not None:
        conf = reference.CONFIG
        own = [(n, list(t.shape)) for n, t in model.named_parameters()] + [(n, list(t.shape)) for n, t in model.named_buffers()]
        shapes = {n: r["inputs"][n]["shape"] for n in conf.get("parameters", {}) if n in r["inputs"]}
        pmap, missing, by_shape = map_parameters(conf.get("parameters", {}), shapes, own)
        if missing:
            raise Refusal("parameters_differ", "the problem's Model has parameters %s that %s does not, by name or by shape "
                          "(it has: %s)" % (", ".join(missing), cls.__name__, ", ".join(sorted(n for n, _ in own)) or "none"))
        for m in by_shape:
            if m not in parameters_by_shape:
                parameters_by_shape.append(m)

        def call(t):
            kw = dict(t, **r.get("scalars", {}))
            for name in conf.get("zero_d", []):
                kw[name] = kw[name].reshape(())
            args = [kw[a] for a in conf["args"]]
            params = {pmap[n]: kw[n] for n in conf.get("parameters", {})}
            if params:
                return submission_code(torch.func.functional_call, model, params, tuple(args))
            return submission_code(model, *args)
        return call
    sig = inspect.signature(model.forward).parameters
    var_kw = any(p.kind == p.VAR_KEYWORD for p in sig.values())

    def call_kw(t):
        kw = dict(t, **r.get("scalars", {}))
        kw.update(r.get("axes", {}))
        return submission_code(lambda: model(**(kw if var_kw else {k: v for k, v in kw.items() if k in sig})))
    return call_kw


def load_inputs(r, d):
    """Dataset d's inputs on the GPU, uploaded by the recorder itself from kqual's files (label "up<d>:<name>"):
    kqual checks each upload's code against its own bytes, and a copy from the host between the calls that the
    recorder did not make is harness_tampered. Read here only where kqual started the worker without it."""
    out = {}
    for name, t in r["inputs"].items():
        if DT.get(t["dtype"]) is None:
            raise ValueError("dtype %s has no torch dtype here" % t["dtype"])
        x = torch.empty([int(s) for s in t["shape"]], dtype=DT[t["dtype"]], device=dev)
        torch.cuda.synchronize()  # nothing pending on the memory the recorder writes
        done = recorder.upload("up%d:%s" % (d, name), x, t["files"][d]) if x.numel() else True
        if done is None:
            raw = torch.from_numpy(np.fromfile(t["files"][d], dtype=np.uint8))
            x = raw.view(DT[t["dtype"]]).reshape(t["shape"]).to(dev)
        elif not done:
            raise RuntimeError("kqual's recorder could not upload dataset %d of input %s from %s (see the record's U line)"
                               % (d, name, t["files"][d]))
        out[name] = x
    return out


def byte_view(t):
    """The tensor's elements in row-major order as bytes. contiguous() alone is not enough: a tensor whose
    non-unit stride sits on a dim of size 1 ([n, 1] with strides (1, n), as x.t() of one row gives) is
    contiguous already, and viewing it as bytes needs a last stride of 1."""
    return t.detach().contiguous().reshape(-1).view(torch.uint8)


def digest(t):
    return hashlib.blake2b(byte_view(t).cpu().numpy().tobytes(), digest_size=16).hexdigest()


def outputs_of(result, r):
    """The call's outputs, checked against the problem: a plain CUDA tensor each, of the problem's dtype
    and shape, dense in row-major order."""
    outs = list(result) if isinstance(result, (tuple, list)) else [result]
    want = r["outputs"]
    if len(outs) != len(want):
        raise Refusal("output_mismatch", "the submission returned %d outputs, the problem %d" % (len(outs), len(want)))
    for o, w in zip(outs, want):
        if type(o) is not torch.Tensor:
            raise Refusal("output_mismatch", "output %s is a %s, not a torch.Tensor (a lazy or wrapped result is not an "
                                                 "output)" % (w["name"], type(o).__name__))
        if o.device.type != "cuda" or o.dtype != DT[w["dtype"]] or list(o.shape) != [int(x) for x in w["shape"]]:
            raise Refusal("output_mismatch", "output %s: %s of shape %s on %s, the problem's is %s of shape %s on cuda" % (
                w["name"], o.dtype, list(o.shape), o.device, w["dtype"], list(w["shape"])))
        if not o.is_contiguous():
            raise Refusal("output_mismatch", "output %s has strides %s: not dense in row-major order as the problem's is "
                                                 "(return .contiguous())" % (w["name"], list(o.stride())))
    return outs


def aliases(outs, inputs, earlier):
    """What the outputs share memory with: an input (the call returned a view of it) or an output an
    earlier call returned (kept alive by kqual meanwhile, so its memory cannot have been reused). Judged
    by kqual after the values, so a cached output is named as such first."""
    found = []
    for o in outs:
        for n, t in inputs.items():
            if overlaps(o, t):
                found.append("input %s" % n)
        for k, prev in enumerate(earlier):
            if any(overlaps(o, p) for p in prev):
                found.append("the output call %d returned" % (k + 1))
    return found


def overlaps(a, b):
    sa, sb = a.untyped_storage(), b.untyped_storage()
    a0, b0 = sa.data_ptr(), sb.data_ptr()
    return sa.nbytes() > 0 and sb.nbytes() > 0 and a0 < b0 + sb.nbytes() and b0 < a0 + sa.nbytes()


def host_bytes(outs):
    return [byte_view(o).cpu().numpy().tobytes() for o in outs]


fence = torch.zeros(1, device=dev)


def checked_call(call, tensors, r, k, earlier):
    """Call k on the caller's stream, held busy first, between the recorder's marks; then the fence (a
    one-element fill on the caller's stream): in the record, work of the call still running on another
    stream when the fence started was not joined to the caller's stream. Returns the outputs' bytes,
    what the worker saw, and the outputs (kept by the caller so later calls cannot reuse their memory)."""
    threads = guard.live_threads()
    before = {n: digest(t) for n, t in tensors.items()}
    torch.cuda.synchronize()
    for n, t in tensors.items():  # what the call is given, read by the recorder itself (kqual checks it is the dataset)
        recorder.read("in%d:%s" % (k, n), t)
    try:
        with torch.cuda.stream(caller), torch.no_grad():
            tracker.arm(caller, 2 * sleep_cycles)
            recorder.mark("armed%d" % k, caller)  # (armed, call]: the spin alone, (returned, fenced]: the fence alone
            torch.cuda._sleep(sleep_cycles)
            recorder.mark("call%d" % k, caller)
            result = call(tensors)
            recorder.mark("returned%d" % k, caller)
            fence.fill_(float(k))
            recorder.mark("fenced%d" % k, caller)
            outs = outputs_of(result, r)
            done = Event()
            done.record(caller)
    finally:
        tracker.disarm()
    done.synchronize()
    with torch.cuda.stream(caller):
        early = host_bytes(outs)  # copied on the caller's stream: what a caller would read
    pending = len(tracker.pending(caller))
    torch.cuda.synchronize()
    late = host_bytes(outs)
    read_natively(r, "out%d" % k, outs)
    info = {"late_bytes": sum(a != b for a, b in zip(early, late)), "pending_streams": pending,
            "new_threads": len(guard.live_threads() - threads),
            "inputs_changed": [n for n, t in tensors.items() if digest(t) != before[n]],
            "aliases": aliases(outs, tensors, earlier)}
    return late, info, outs


def read_natively(r, prefix, outs):
    """The recorder reads each output's device memory itself ('R' lines "<prefix>:<name>"): kqual judges
    the bytes written to the files only where they are the bytes the recorder read."""
    for o, w in zip(outs, r["outputs"]):
        recorder.read("%s:%s" % (prefix, w["name"]), o)


def write(r, k, data):
    for o, b in zip(r["outputs"], data):
        with open(o["files"][k], "wb") as f:
            f.write(b)


# Seconds spent running the reference, and the most this worker spends on it: a slow reference (a
# Python loop over pages) must not push the submission's own calls past their deadline.
reference_run_s = [0.0]
REFERENCE_RUN_BUDGET_S = 20.0
reference_fns = {}


def reference_fn(r):
    """The problem's own PyTorch form (an imported KernelBench problem's Model, the built-in contract's
    expression from kqual_torch_ops, or a declared contract's PyTorch reference function) as a function
    of one dataset's tensors, or (None, why not)."""
    if reference is not None:
        return caller_fn(model_for(r.get("axes", {}), reference._problem().Model), r), ""
    if cfg.get("builtin"):
        from kqual_torch_ops import OPS
        op = OPS.get(cfg["builtin"])
        if op is not None:
            return (lambda x: op.fn(*[x[n] for n in op.inputs])), ""
    if cfg.get("reference_py"):
        # A declared contract's PyTorch reference (an imported Definition's run(), through kqual_run),
        # called on the same CUDA tensors by keyword, as kqual's reference process calls it.
        if "declared" not in reference_fns:
            ref = load_module("kqual_submission_problem_reference", cfg["reference_py"])
            reference_fns["declared"] = getattr(ref, cfg.get("reference_function", "run"))
        rfn = reference_fns["declared"]
        rsig = inspect.signature(rfn).parameters
        rvar = any(p.kind == p.VAR_KEYWORD for p in rsig.values())

        def fn(x):
            kw = dict(x, **r.get("scalars", {}))
            kw.update(r.get("axes", {}))
            return rfn(**(kw if rvar else {k: v for k, v in kw.items() if k in rsig}))
        return fn, ""
    return None, "no PyTorch form of the problem here: the kernels' origin alone decides"


def run_reference(r):
    """The problem's own reference on this case's dataset A, between the recorder's marks "ref" and
    "ref-done": the kernels it launches are in the record, and a submission that launches one of them
    hands the work to the reference, even where the kernel is one no library would be blamed for (the
    copy kernel of a transpose). Returns a note where it did not run."""
    if reference_run_s[0] > REFERENCE_RUN_BUDGET_S:
        return "the reference's budget (%g s) is spent: the kernels' origin alone decides" % REFERENCE_RUN_BUDGET_S
    started = _clock()
    try:
        fn, note = reference_fn(r)
        if fn is not None:
            t = load_inputs(r, 0)
            torch.cuda.synchronize()
            with torch.cuda.stream(caller), torch.no_grad():
                recorder.mark("ref", caller)
                fn(t)
                recorder.mark("ref-done", caller)
            torch.cuda.synchronize()
    except Exception as e:  # the reference's failure is not the submission's
        note = "the reference could not run here: %s" % exc_text(e)
    reference_run_s[0] += _clock() - started
    return note


def do_check(r):
    """Three calls (docstring at the top), the problem's reference after them, and the record flushed."""
    model = model_for(r.get("axes", {}))
    call = caller_fn(model, r)
    calls, kept = [], []
    a = load_inputs(r, 0)
    data, info, outs = checked_call(call, a, r, 1, kept)
    write(r, 0, data)
    calls.append(info)
    kept.append(outs)
    b = load_inputs(r, 1)
    with torch.no_grad():
        for n in a:
            a[n].copy_(b[n])  # same storage, new values: a result cached by data_ptr and shape shows here
    data, info, outs = checked_call(call, a, r, 2, kept)
    write(r, 1, data)
    calls.append(info)
    kept.append(outs)
    data, info, outs = checked_call(call, load_inputs(r, 0), r, 3, kept)
    write(r, 2, data)
    calls.append(info)
    del kept
    note = run_reference(r)
    torch.cuda.synchronize()  # the record is flushed after the reply (below), every request's
    return {"ok": True, "calls": calls, "reference_note": note, "replaced": originals.replaced(),
            "parameters_by_shape": parameters_by_shape}


class Timed:
    """The submission at one shape, timed as kqual's timing worker times the PyTorch baselines
    (kqual_torch_timing): one set of static input tensors, each dataset copied into them before its
    sample (outside the window, before the L2 flush), so consecutive launches see other values and
    an output kept by tensor identity goes stale; the call captured in a CUDA graph on the caller's
    stream where it can be (window "cuda_graph"), else the call itself between events on the caller's
    stream, every tracked side stream joined before the end event (window "eager_call")."""

    def __init__(self, r):
        self.r = r
        model = model_for(r.get("axes", {}))
        self.call = caller_fn(model, r)
        # Datasets A and B (timed), and C and D where kqual gives them (the verified last calls only).
        self.data = [load_inputs(r, d) for d in range(len(next(iter(r["inputs"].values()))["files"]))]
        self.x = {n: t.clone() for n, t in self.data[0].items()}
        torch.cuda.synchronize()  # made on the default stream; everything after runs on the caller's
        self.notes = []
        with torch.cuda.stream(caller), torch.no_grad():
            outputs_of(self.call(self.x), r)  # the first call (compilation, autotuning) outside any graph
        torch.cuda.synchronize()
        self.graph = None
        if r.get("window") != "eager_call":
            try:
                with torch.cuda.stream(caller), torch.no_grad():
                    self.graph, self.outs, self.events = capture_graph(lambda: outputs_of(self.call(self.x), r))
                self.window = "cuda_graph" if self.events else "cuda_graph_outer_events"
            except Refusal:
                raise
            except Exception as e:
                torch.cuda.synchronize()
                self.graph = None
                self.notes.append("timed with dispatch and allocation in the window: the call could not be captured in a "
                                  "CUDA graph (%s)" % exc_text(e)[:300])
        if self.graph is None:
            self.window = "eager_call"
            self.outs = None
        self.fresh_values(r)

    def fresh_values(self, r):
        """This block's request and its fresh values (kqual's "fresh"): the inputs named are shifted by a number
        the recorder draws before each timed call; after it, a draw decides whether its inputs and outputs are
        read back (fresh["verify"] calls per block, their outputs written under fresh["dir"])."""
        fresh = r.get("fresh") or {}
        self.r = r
        self.roll = [n for n in fresh.get("inputs", []) if n in self.x]
        self.verify = int(fresh.get("verify", 0))
        self.verify_dir = fresh.get("dir", "")
        self.verified = 0

    def prepare(self, d, attempt=None):
        """Dataset d into the static inputs: as it is for a warm-up call (attempt None), else each input kqual
        named rotated by the recorder's draw "p<attempt>:<name>" (element i takes element (i + s) mod n), so
        that every timed call sees values no other call saw."""
        with torch.no_grad():
            for n, t in self.x.items():
                src = self.data[d][n]
                if attempt is None or n not in self.roll or t.numel() < 2:
                    t.copy_(src)
                    continue
                flat, whole, k = t.view(-1), src.reshape(-1), t.numel()
                s = recorder.draw("p%d:%s" % (attempt, n)) % k
                flat[:k - s].copy_(whole[s:])
                if s:
                    flat[k - s:].copy_(whole[:s])

    def after(self, attempt, kept):
        """After timed call `attempt` (kept: samples kept before it): the recorder's draw "s<attempt>" decides,
        where the call can no longer change its result, whether it is one of the fresh["verify"] calls of this
        block whose inputs and outputs are read back (selection sampling: r still to pick among m left picks
        this one when draw mod m < r; kqual repeats the rule on the record's draws)."""
        v = recorder.draw("s%d" % attempt)
        left, want = max(int(self.r["samples"]) - kept, 1), self.verify - self.verified
        if want <= 0 or v % left >= want:
            return
        self.verified += 1
        torch.cuda.synchronize()
        label = "s%d" % attempt
        for n, t in self.x.items():
            recorder.read("%s:in:%s" % (label, n), t)
        outs = outputs_of(self.outs, self.r)
        for o, w, data in zip(outs, self.r["outputs"], host_bytes(outs)):
            with open(os.path.join(self.verify_dir, "%s.%s.out" % (label, w["name"])), "wb") as f:
                f.write(data)
            recorder.read("%s:out:%s" % (label, w["name"]), o)

    def run(self):
        if self.graph is not None:
            with torch.cuda.stream(caller):
                self.graph.replay()
            return self.events
        with torch.cuda.stream(caller), torch.no_grad():
            self.outs = outputs_of(self.call(self.x), self.r)
            tracker.join(caller)
        return None

    def write_outputs(self):
        """The verified calls, between the recorder's marks v<k> / vd<k>: on datasets C and D, which no timed
        call saw, where kqual gave them (else A and B); their outputs are written as A's and B's, kqual
        checks them, and every timed call's GPU work is compared with theirs."""
        fresh = [2, 3] if len(self.data) >= 4 else [0, 1]
        for k, d in enumerate(fresh):
            self.prepare(d, None)
            torch.cuda.synchronize()
            recorder.mark("v%d" % k, caller)
            self.run()
            recorder.mark("vd%d" % k, caller)
            torch.cuda.synchronize()
            write(self.r, k, host_bytes(self.outs))
            read_natively(self.r, "v%d" % k, outputs_of(self.outs, self.r))


timed_states = {}


def do_time(r):
    """A request as kqual's timing worker takes one (timing_worker.py: inputs and outputs with files
    [A, B], flush, clock_guard, samples, warmup, write_outputs, measure_direct, window)."""
    key = json.dumps({"inputs": r["inputs"], "axes": r.get("axes", {}), "window": r.get("window", "")}, sort_keys=True)
    if key not in timed_states:
        timed_states.clear()
        torch.cuda.empty_cache()
        timed_states[key] = Timed(r)
    st = timed_states[key]
    st.fresh_values(r)
    res = {"ok": True, "samples_ms": [], "warmup_ms": [], "datasets": [], "sm_mhz": [], "mem_mhz": [], "discarded": 0,
           "clock_events": [], "guard_exhausted": False, "clocks_note": clocks.note,
           "reference_sm_mhz": clocks.reference_mhz(), "max_temperature_c": 0, "window": st.window, "notes": st.notes,
           "expression": "%s.%s" % (os.path.basename(cfg["submission"]), cls.__name__)}
    runs = [st.run, st.run]
    # Everything of a sample on the caller's stream: the dataset copy, the flush, the events around an
    # eager call (PyTorch's streams do not wait for the default stream, so events there would not
    # bracket the call's work).
    with torch.cuda.stream(caller), torch.no_grad():
        sample(runs, r, res, clocks, flusher, prepare=st.prepare, recorder=recorder,
               after=st.after if r.get("fresh") else None)
        if r.get("write_outputs"):
            st.write_outputs()
    res["replaced"] = originals.replaced()
    res["pending_streams"] = len(tracker.pending(caller))
    return res


recorder.flush("hello")
reply({"ok": True, "torch": torch.__version__, "device": torch.cuda.get_device_name(dev),
       "mode": "kernelbench" if reference is not None else "keywords", "replaced": replaced_at_import,
       "record": recorder.lib is not None, "record_note": recorder.note})
for line in sys.stdin:
    if not line.strip():
        continue
    try:
        r = json.loads(line)
    except ValueError as e:
        reply({"ok": False, "code": "usage", "error": "request not JSON: %s" % exc_text(e)})
        continue
    faulthandler.dump_traceback_later(max(1.0, float(r.get("deadline_s", 60)) - 1.0), exit=False)
    try:
        if r.get("op") == "check":
            reply(do_check(r))
        elif r.get("op") == "time":
            reply(do_time(r))
        else:
            reply({"ok": False, "code": "usage", "error": "unknown op %r (check, time)" % r.get("op")})
    except Refusal as e:
        reply({"ok": False, "code": e.code, "error": str(e), "replaced": originals.replaced()})
    except SubmissionRaised as e:  # the submission's exception is its verdict
        reply({"ok": False, "code": "build_failed" if e.build else "exception", "error": (e.build or str(e))[:2000],
               "traceback": e.tb, "replaced": originals.replaced()})
    except BaseException as e:
        if is_cuda_error(e):  # caused by the submission's kernels, reported at kqual's next synchronisation
            reply({"ok": False, "code": "exception", "error": exc_text(e)[:2000], "traceback": tb_tail(),
                   "replaced": originals.replaced()})
        else:  # kqual's own side failed (reading its files, hashing, writing outputs): never the submission's verdict
            reply({"ok": False, "code": "worker_error", "error": "kqual's submission worker failed (not the submission): %s"
                   % exc_text(e)[:2000], "traceback": tb_tail(), "replaced": originals.replaced()})
    finally:
        faulthandler.cancel_dump_traceback_later()
        if r.get("token"):
            try:
                torch.cuda.synchronize()
            except BaseException:
                pass
            recorder.flush(r["token"])
