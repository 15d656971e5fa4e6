// The Python side of the reference process (python_reference.hpp): the only Python kqual runs for a
// declared contract. It imports the contract's reference (and [generator]) file, then answers one
// JSON line per request: "reference" evaluates the reference on input files, "generate" calls the
// generator with a case's axes, scalars and seed and writes the inputs it makes. Everything it
// reports as an error becomes a contract error naming the file and the case, never a candidate
// failure; what kqual checks of generated values beyond their dtype and shape it checks itself
// (declared_generated.cpp).
#include "python_reference.hpp"

#include <string>

namespace kqual::contract::declared {

namespace {

constexpr const char* kDriver = R"PY(
import sys, json, inspect, importlib.util, random, traceback
def reply(o):
    sys.stdout.write(json.dumps(o) + "\n"); sys.stdout.flush()
def failure(e):
    return {"ok": False, "error": "".join(traceback.format_exception_only(type(e), e)).strip(),
            "trace": traceback.format_exc(limit=6)}
cfg = json.loads(sys.argv[1])
gen = cfg.get("generator")
torch = None
modules = {}
def load(path, function):
    if path not in modules:
        spec = importlib.util.spec_from_file_location("kqual_contract_module_%d" % len(modules), path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        modules[path] = mod
    fn = getattr(modules[path], function, None)
    if fn is None or not callable(fn):
        raise AttributeError("%s defines no function '%s'" % (path, function))
    params = inspect.signature(fn).parameters
    return fn, params, any(p.kind == p.VAR_KEYWORD for p in params.values())
try:
    import numpy as np
    wants = [w for w, k in (("[reference]", cfg["kind"]), ("[generator]", gen["kind"] if gen else "")) if k == "torch"]
    if wants:
        try:
            import torch
        except ImportError as e:
            raise ImportError("needs PyTorch: %s, and %s cannot import torch (%s); run it where PyTorch is installed"
                              % (" and ".join('%s kind = "torch"' % w for w in wants), sys.executable, e))
    ref_torch = cfg["kind"] == "torch"
    fn, params, var_kw = load(cfg["file"], cfg["function"])
    alt = load(cfg["file"], cfg["alternative"]) if cfg.get("alternative") else None
    if gen:
        gfn, gparams, gvar_kw = load(gen["file"], gen["function"])
    reply({"ok": True, "numpy": np.__version__, "torch": torch.__version__ if torch else None})
except BaseException as e:
    reply(failure(e)); sys.exit(0)
def bind(kw, params, var_kw):
    if var_kw:
        return kw
    missing = [p for p, v in params.items() if p not in kw and v.default is inspect.Parameter.empty
               and v.kind not in (v.VAR_POSITIONAL,)]
    if missing:
        raise TypeError("parameter(s) %s are neither an input, a scalar nor an axis (known: %s)"
                        % (", ".join(missing), ", ".join(sorted(kw))))
    return {k: v for k, v in kw.items() if k in params}
def seed_all(seed):
    random.seed(seed)
    np.random.seed(seed)
    if torch is not None:
        torch.manual_seed(seed)
def by_name(out, names, what):
    if isinstance(out, dict):
        return out
    if isinstance(out, (tuple, list)) and len(names) > 1:
        if len(out) != len(names):
            raise ValueError("returned %d %s, expected %d (%s)" % (len(out), what, len(names), ", ".join(names)))
        return dict(zip(names, out))
    if len(names) != 1:
        raise ValueError("returned one value, expected %d %s (%s): return a dict" % (len(names), what, ", ".join(names)))
    return {names[0]: out}
def as_numpy(v):
    if torch is not None and isinstance(v, torch.Tensor):
        # Packed fp4 (two e2m1 values a byte) is its bytes: kqual holds it as u8.
        if v.dtype == getattr(torch, "float4_e2m1fn_x2", None):
            v = v.view(torch.uint8)
        # NumPy has no bfloat16 (nor fp8): such a tensor is widened exactly.
        if v.is_floating_point() and v.dtype not in (torch.float32, torch.float64):
            v = v.to(torch.float64)
        v = v.detach().cpu().numpy()
    return np.asarray(v)
def load_inputs(r):
    return {name: read_one(t) for name, t in r["inputs"].items()}
# A torch reference that builds float32 tensors of its own and meets kqual's float64 inputs
# (`index_add_(): self (Float) and source (Double)`) is run with its float inputs at float32 instead,
# from then on for every case of the contract, and each reply says so (the memo names it).
reduced = None
def mixes_float32(e):
    m = str(e)
    return ("Float" in m and "Double" in m) or ("float" in m and "double" in m)
def call(arrays, r, which=None):
    global reduced
    if reduced is None:
        try:
            return call_at(arrays, r, None, which)
        except RuntimeError as e:
            if not ref_torch or not mixes_float32(e):
                raise
            reduced = str(e).strip().splitlines()[0][:300]
    return call_at(arrays, r, torch.float32, which)
def call_at(arrays, r, float_dtype, which):
    f, ps, vkw = which or (fn, params, var_kw)
    def tensor(a):
        t = torch.from_numpy(a)
        return t.to(float_dtype) if float_dtype is not None and t.is_floating_point() else t
    kw = {name: (tensor(a) if ref_torch else a) for name, a in arrays.items()}
    kw.update(r["scalars"])
    kw.update(r["axes"])
    kw = bind(kw, ps, vkw)
    seed_all(r.get("rng_seed", 0))
    with np.errstate(all="ignore"):
        out = f(**kw)
    names = [o["name"] for o in r["outputs"]]
    out = by_name(out, names, "outputs")
    extra = [k for k in out if k not in names]
    lost = [k for k in names if k not in out]
    if extra or lost:
        raise ValueError("returned outputs %s, expected %s" % (sorted(out), names))
    return out
def converted(outs, o):
    """Output o as kqual reads it: int64 for an integer output, else float64; checked first."""
    v = as_numpy(outs[o["name"]])
    if tuple(v.shape) != tuple(o["shape"]):
        raise ValueError("output '%s' has shape %s, expected %s" % (o["name"], tuple(v.shape), tuple(o["shape"])))
    if v.dtype.kind not in "fiub":
        raise TypeError("output '%s' has dtype %s, expected numbers" % (o["name"], v.dtype))
    if o["int"]:
        if v.dtype.kind == "f":
            bad = ~np.isfinite(v) | (v != np.round(v))
            if bad.any():
                i = int(np.flatnonzero(bad.ravel())[0])
                raise ValueError("integer output '%s' has the non-integral value %r at element %d" % (o["name"], float(v.ravel()[i]), i))
        return np.ascontiguousarray(v, dtype=np.int64)
    return np.ascontiguousarray(v, dtype=np.float64)
def write(outs, r, suffix):
    for o in r["outputs"]:
        converted(outs, o).tofile(o["file"] + suffix)
def read_one(t):
    a = np.fromfile(t["file"], dtype={"f4": np.float32, "f8": np.float64, "i8": np.int64, "b1": np.bool_}[t["dtype"]])
    return (a.astype(np.float64) if a.dtype == np.float32 else a).reshape(t["shape"])
def moves(r):
    """For each alternative input: does swapping it in change any output (exactly, NaN == NaN)?"""
    arrays = load_inputs(r)
    fresh = lambda d: {k: a.copy() for k, a in d.items()}  # the reference may write into its arguments
    base = call(fresh(arrays), r)
    want = {o["name"]: converted(base, o) for o in r["outputs"]}
    moved = {}
    for name, t in r["alternatives"].items():
        alt = fresh(arrays)
        alt[name] = read_one(t)
        got = call(alt, r)
        moved[name] = any(not np.array_equal(want[o["name"]], converted(got, o), equal_nan=not o["int"]) for o in r["outputs"])
    return moved
KINDS = {"int": ("iu", "integers"), "bool": ("b", "booleans (dtype bool)"), "float": ("f", "floating-point numbers")}
def generate(r):
    kw = {"seed": r["seed"], "family": r["family"]}
    kw.update(r["scalars"])
    kw.update(r["axes"])
    kw = bind(kw, gparams, gvar_kw)
    seed_all(r["seed"])
    with np.errstate(all="ignore"):
        out = gfn(**kw)
    names = [t["name"] for t in r["tensors"]]
    out = by_name(out, names, "inputs")
    unknown = [k for k in out if k not in names and k not in r["other_inputs"]]
    missing = [k for k in names if k not in out]
    if unknown or missing:
        raise ValueError("returned %s; expected the inputs with source = \"generator\" (%s)%s"
                         % (sorted(out), ", ".join(names), "; '%s' is no input of the contract" % "', '".join(unknown) if unknown else ""))
    for t in r["tensors"]:
        v = as_numpy(out[t["name"]])
        if tuple(v.shape) != tuple(t["shape"]):
            raise ValueError("input '%s' has shape %s, expected %s (its declared shape [%s] at this case)"
                             % (t["name"], tuple(v.shape), tuple(t["shape"]), ", ".join(t["axes"])))
        kinds, words = KINDS[t["kind"]]
        if v.dtype.kind not in kinds:
            raise TypeError("input '%s' has dtype %s, expected %s: it is declared %s" % (t["name"], v.dtype, words, t["dtype"]))
        if t["kind"] == "int" and v.dtype.kind == "u" and v.size and int(v.max()) > 2**63 - 1:
            raise ValueError("input '%s' holds %d, past any integer dtype kqual stores" % (t["name"], int(v.max())))
        store = np.float64 if t["kind"] == "float" else np.int64  # bool as 0 and 1
        np.ascontiguousarray(v, dtype=store).tofile(t["file"])
for line in sys.stdin:
    r = json.loads(line)
    try:
        if r.get("op") == "generate":
            generate(r)
        elif r.get("op") == "moves":
            moved = moves(r)
            reply({"ok": True, "moved": moved} if reduced is None else {"ok": True, "moved": moved, "reference_float32": reduced})
            continue
        else:
            arrays = load_inputs(r)
            # |inputs| first: the reference may write into its arguments.
            mags = {k: np.abs(a) for k, a in arrays.items()} if r.get("magnitude") else None
            alts = {k: a.copy() for k, a in arrays.items()} if alt else None
            write(call(arrays, r), r, "")
            if alts is not None:
                write(call(alts, r, alt), r, ".alt")
            if mags is not None:
                write(call(mags, r), r, ".mag")
            if reduced is not None:
                reply({"ok": True, "reference_float32": reduced})
                continue
        reply({"ok": True})
    except BaseException as e:
        reply(failure(e))
)PY";

}  // namespace

const char* reference_driver_source() {
  static const std::string source = std::string(kIsolatedPrelude) + kDriver;
  return source.c_str();
}

}  // namespace kqual::contract::declared
