#!/usr/bin/env python3
"""Shapes, dtypes and values of a KernelBench problem module, as one JSON object on stdout.

Run by `kqual import-kernelbench PROBLEM.py` (src/import/import_kernelbench.cpp translates the JSON
into a declared contract; docs/kernelbench.md). Usage: kernelbench_capture.py PROBLEM.py SAMPLE_CAP

What it does, in order:
  1. imports the module (torch seeded), finds Model, get_inputs, get_init_inputs and the module-level
     integer constants;
  2. on the meta device (no memory, no arithmetic): builds the model from get_init_inputs(), calls
     get_inputs() and forward, and records every input, parameter, buffer and output shape and dtype;
  3. perturbs each integer constant by +3, +7 and to twice its value (again on meta) and records which dims move with it,
     as dim = a * constant + b; a constant whose change breaks the module, or moves the structure,
     is not an axis (and why);
  4. on the CPU with real tensors, at sizes scaled down to at most SAMPLE_CAP elements per tensor
     (the constants that are axes shrunk; where the forward refuses sizes that small, grown back
     toward the module's values up to 2^22 elements, and those sizes become the axes' minimum:
     kqual_scaledown.py), samples the inputs' and parameters' values and calls forward twice with
     different seeds: a forward that differs is random, and is refused.
Errors are JSON too: {"ok": false, "code": ..., "error": ...}; codes: no_torch, import_failed,
not_a_problem, meta_failed, values_failed.
"""
import importlib.util
import inspect
import json
import sys
import time
import traceback

import kqual_scaledown as scaledown  # beside this script


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def fail(code, error):
    emit({"ok": False, "code": code, "error": error})
    sys.exit(0)


def exc_text(e):
    return "".join(traceback.format_exception_only(type(e), e)).strip()


def main():
    path, sample_cap = sys.argv[1], int(sys.argv[2])
    try:
        import torch
    except Exception as e:  # ImportError, or a broken install
        fail("no_torch", "PyTorch is not importable with %s (%s)" % (sys.executable, exc_text(e)))

    torch.manual_seed(0)
    try:
        spec = importlib.util.spec_from_file_location("kqual_kernelbench_problem", path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod  # torch.compile (dynamo) looks the module up by name
        spec.loader.exec_module(mod)
    except BaseException as e:
        fail("import_failed", "%s cannot be imported: %s" % (path, exc_text(e)))
    missing = [n for n in ("Model", "get_inputs", "get_init_inputs") if not callable(getattr(mod, n, None))]
    if missing:
        fail("not_a_problem", "%s defines no %s (a KernelBench problem has class Model, get_inputs() and "
                              "get_init_inputs())" % (path, ", ".join(missing)))
    constants = {k: v for k, v in vars(mod).items()
                 if type(v) is int and not k.startswith("_") and k.isidentifier()}
    try:
        forward_params = [p for p in inspect.signature(mod.Model.forward).parameters][1:]
    except (TypeError, ValueError):
        forward_params = []

    def dtype_name(t):
        return str(t.dtype).replace("torch.", "")

    # The ATen operators forward runs (their names, overloads dropped): the importer bounds an output's error
    # by the magnitude of its summed terms where every operator lets it (import_kernelbench.cpp).
    ops = set()
    try:
        from torch.utils._python_dispatch import TorchDispatchMode

        class Ops(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                try:
                    ops.add(func._schema.name.split("::")[-1])
                except Exception:  # an operator without a schema: named by its repr, which no list knows
                    ops.add(repr(func))
                return func(*args, **(kwargs or {}))
    except Exception:  # an older PyTorch: no operator list, so no magnitude bound
        Ops = None

    def run(overrides, device):
        """Model, inputs, outputs with the constants overridden, on `device`."""
        saved = {k: getattr(mod, k) for k in overrides}
        try:
            for k, v in overrides.items():
                setattr(mod, k, v)
            with torch.device(device):
                torch.manual_seed(0)
                init = list(mod.get_init_inputs())
                try:
                    model = mod.Model(*init)
                except RuntimeError as e:
                    if device != "meta" or "meta" not in str(e):
                        raise
                    # An __init__ that reads a value (a drop-path schedule: torch.linspace(...)[i].item())
                    # cannot run on meta: the model is built on the CPU and its tensors moved to meta.
                    with torch.device("cpu"):
                        torch.manual_seed(0)
                        model = mod.Model(*init).to("meta")
                inputs = list(mod.get_inputs())
                out = None
                if Ops is not None:
                    try:
                        with Ops():
                            out = model(*inputs)
                    except Exception:  # forward refuses to run under the mode: run as it is, no operator list
                        ops.clear()
                        ops.add("<forward did not run under the operator recorder>")
                        out = None
                if out is None:
                    out = model(*inputs)
        finally:
            for k, v in saved.items():
                setattr(mod, k, v)
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        return init, model, inputs, outs

    def layout(model, inputs, outs):
        """Every tensor's (group, name, dtype, shape); non-tensor inputs as scalars."""
        items = []
        for i, x in enumerate(inputs):
            if isinstance(x, torch.Tensor):
                items.append(("input", str(i), dtype_name(x), list(x.shape)))
            elif isinstance(x, (bool,)) or not isinstance(x, (int, float)):
                items.append(("input", str(i), "unsupported:" + type(x).__name__, []))
            else:
                items.append(("input", str(i), "scalar", []))
        for n, p in model.named_parameters():
            items.append(("parameter", n, dtype_name(p), list(p.shape)))
        for n, b in model.named_buffers():
            items.append(("buffer", n, dtype_name(b), list(b.shape)))
        for i, o in enumerate(outs):
            if isinstance(o, torch.Tensor):
                items.append(("output", str(i), dtype_name(o), list(o.shape)))
            else:
                items.append(("output", str(i), "unsupported:" + type(o).__name__, []))
        return items

    try:
        init, model, inputs, outs = run({}, "meta")
    except BaseException as e:
        fail("meta_failed", "building Model(*get_init_inputs()), get_inputs() and forward on the meta device failed: %s "
                            "(kqual reads shapes there, without memory or arithmetic)" % exc_text(e))
    base = layout(model, inputs, outs)

    # Which dims move with which constant: dim = a * c + b, from two perturbations.
    deps = {}        # (index into base, dim) -> (constant, a, b)
    multi = set()    # dims moved by more than one constant, or non-linearly
    movers = {}      # (index into base, dim) -> the constants that move it
    not_axes = {}
    axis_constants = {}
    for c, v in constants.items():
        if v < 1:
            continue
        shapes = []
        try:
            for k in (3, 7):
                _, m2, i2, o2 = run({c: v + k}, "meta")
                shapes.append(layout(m2, i2, o2))
        except BaseException as e:
            not_axes[c] = "changing it makes the module fail: %s" % exc_text(e).splitlines()[0][:200]
            continue
        if any(len(s) != len(base) or any((x[0], x[1], x[2], len(x[3])) != (y[0], y[1], y[2], len(y[3]))
                                         for x, y in zip(s, base)) for s in shapes):
            not_axes[c] = "changing it changes the number, names, dtypes or ranks of the tensors"
            continue
        # And doubled: a pooling window or a stride floors a step of 3 or 7 away (2048 -> 2051 leaves an
        # 11-wide pool's output at 186), so a dim that looks fixed may still move. Where the module
        # refuses the doubled value, the two small steps decide alone.
        try:
            _, m2, i2, o2 = run({c: 2 * v}, "meta")
            doubled = layout(m2, i2, o2)
            if len(doubled) != len(base) or any(len(x[3]) != len(y[3]) for x, y in zip(doubled, base)):
                doubled = None
        except BaseException:
            doubled = None
        moved = []
        for ti, t in enumerate(base):
            for di, d0 in enumerate(t[3]):
                d1, d2 = shapes[0][ti][3][di], shapes[1][ti][3][di]
                d3 = doubled[ti][3][di] if doubled else d0
                if d1 == d0 and d2 == d0 and d3 == d0:
                    continue
                movers.setdefault((ti, di), set()).add(c)
                if (d1 - d0) % 3 != 0 or (d1 - d0) // 3 * 7 != d2 - d0 or (doubled and (d1 - d0) // 3 * v != d3 - d0):
                    multi.add((ti, di))  # not linear in the constant: held fixed
                    continue
                a = (d1 - d0) // 3
                moved.append(((ti, di), (c, a, d0 - a * v)))
        if not moved:
            continue
        # The smallest value the module takes (meta again) without emptying a dim that is not empty at
        # the module's value (the meta device lets a convolution's output reach 0 wide): the axis's minimum.
        lowest = v
        for lo in sorted({1, 2, 8, 32, max(1, v // 2)}):
            if lo >= v:
                break
            try:
                _, ml, il, ol = run({c: lo}, "meta")
                low = layout(ml, il, ol)
                if len(low) == len(base) and any(d < 1 <= d0 for x, y in zip(low, base) for d, d0 in zip(x[3], y[3])):
                    continue
                lowest = lo
                break
            except BaseException:
                continue
        axis_constants[c] = {"value": v, "min": lowest}
        for key, dep in moved:
            if key in deps:
                multi.add(key)
            deps[key] = dep
    for key in multi:
        deps.pop(key, None)
    # A constant that moves such a dim cannot vary alone: at other values the dim held fixed would no
    # longer be the module's (a convolution's output width moves with both the input's width and
    # kernel_size). Every one of them is held at its value, and the dims it moved become fixed too.
    held = {}
    for c in sorted(scaledown.constants_to_hold(movers, multi) & set(axis_constants)):
        del axis_constants[c]
        not_axes[c] = ("it moves a dim that another constant moves too, or moves one non-linearly: held at %d so that "
                       "every shape stays the module's" % constants[c])
        for key in [k for k, d in deps.items() if d[0] == c]:
            del deps[key]
            held[key] = c

    def dims_of(ti):
        t = base[ti]
        out = []
        for di, d in enumerate(t[3]):
            dep = deps.get((ti, di))
            if dep:
                out.append({"value": d, "const": dep[0], "a": dep[1], "b": dep[2]})
            else:
                out.append({"value": d, "fixed": True, "why": "moved by several constants or non-linearly"
                            if (ti, di) in multi else "its constant %s is held (%s)" % (held[(ti, di)], not_axes[held[(ti, di)]])
                            if (ti, di) in held else "no module-level integer changes it"})
        return out

    # Values: real tensors on the CPU at sizes scaled down so no tensor exceeds sample_cap elements.
    sizes = {c: a["value"] for c, a in axis_constants.items()}

    def elements_at(sz):
        worst = 0
        for ti, t in enumerate(base):
            n = 1
            for di, d in enumerate(t[3]):
                dep = deps.get((ti, di))
                n *= (dep[1] * sz[dep[0]] + dep[2]) if dep else d
            worst = max(worst, n)
        return worst

    sizes = scaledown.shrink(sizes, {c: a["min"] for c, a in axis_constants.items()}, elements_at, sample_cap)
    notes = []
    values = {}
    random_forward = None
    sampled = None
    grow_cap = max(sample_cap, 1 << 22)
    if elements_at(sizes) <= grow_cap:
        def overrides_at(sz):
            return {c: v for c, v in sz.items() if v != axis_constants[c]["value"]}

        refusals = []

        def attempt(sz):
            try:
                run(overrides_at(sz), "cpu")
                return None
            except BaseException as e:
                refusals.append(exc_text(e))
                return refusals[-1]

        # Sizes this small can be ones the forward refuses: grown back toward the module's values (at
        # most grow_cap elements) until it runs; the axes grown get those sizes as their minimum.
        shrunk_to = dict(sizes)
        sizes, error, runs, tried = scaledown.back_off(sizes, {c: a["value"] for c, a in axis_constants.items()},
                                                       elements_at, grow_cap, attempt, max_runs=24)
        if error is not None:
            fail("values_failed", "running get_inputs() and forward on the CPU at the scaled-down sizes %s failed: %s (and at "
                 "%d larger sizes up to %s, at most %d elements)" % (json.dumps(shrunk_to), error, runs - 1,
                                                                   json.dumps(tried[-1]), grow_cap))
        grown = {c: v for c, v in sizes.items() if v > shrunk_to[c]}
        for c, v in grown.items():
            axis_constants[c]["min"] = max(axis_constants[c]["min"], v)
        if grown:
            notes.append("the forward refused the scaled-down sizes %s (%s); it ran at %s, so %s became the smallest value "
                         "of %s" % (json.dumps(shrunk_to), refusals[0], json.dumps(sizes), json.dumps(grown),
                                    "those axes" if len(grown) > 1 else "that axis"))
        # The contract's small cases sit at a smaller base shape still (kqual shrinks every axis until the
        # largest tensor has at most 4096 elements: import_kernelbench_shapes.cpp, the same halving). The
        # forward must run there too (a BatchNorm over one value per channel at 1 x 1 images does not):
        # where it refuses, those axes are grown back from there and their minimum raised, as above.
        base_cap = 4096
        mins = {c: a["min"] for c, a in axis_constants.items()}
        base_sizes = scaledown.shrink({c: a["value"] for c, a in axis_constants.items()}, mins, elements_at, base_cap)
        if base_sizes != sizes:
            n_refusals = len(refusals)
            started = time.monotonic()
            # Grown back only where one forward there is quick (a model with large fixed weights pays for
            # them at every size: the 90 s a capture has are not spent on this).
            if attempt(base_sizes) is not None and time.monotonic() - started < 3:
                base_from = dict(base_sizes)
                ran_at, base_error, _, _ = scaledown.back_off(base_sizes, {c: a["value"] for c, a in axis_constants.items()},
                                                               elements_at, max(elements_at(sizes), base_cap), attempt,
                                                               max_runs=12)
                raised = {c: v for c, v in ran_at.items() if v > base_from[c]} if base_error is None else {}
                for c, v in raised.items():
                    axis_constants[c]["min"] = max(axis_constants[c]["min"], v)
                if raised:
                    notes.append("the forward refused the small cases' base shape %s (%s); it ran at %s, so %s became the "
                                 "smallest value of %s" % (json.dumps(base_from), refusals[n_refusals], json.dumps(ran_at),
                                                           json.dumps(raised), "those axes" if len(raised) > 1 else "that axis"))
        try:
            overrides = overrides_at(sizes)
            _, rm, ri, ro = run(overrides, "cpu")
            sampled = sizes

            def stats(t):
                x = t.detach().to(torch.float64).flatten()
                if x.numel() == 0:
                    return None
                finite = torch.isfinite(x)
                xf = x[finite]
                s = {"n": int(x.numel()), "nonfinite": int((~finite).sum())}
                if xf.numel():
                    s.update({"min": float(xf.min()), "max": float(xf.max()), "mean": float(xf.mean()),
                              "std": float(xf.std()) if xf.numel() > 1 else 0.0,
                              "integral": bool((xf == torch.round(xf)).all())})
                    # Probabilities (a softmax along the last dim, as KLDivLoss's get_inputs makes them):
                    # non-negative rows of several elements that each sum to 1.
                    if t.dim() >= 1 and t.shape[-1] > 1 and xf.numel() == x.numel() and float(xf.min()) >= 0:
                        sums = x.reshape(-1, t.shape[-1]).sum(dim=-1)
                        s["rows_sum_to_one"] = bool(((sums - 1).abs() <= 1e-4).all())
                return s

            for i, x in enumerate(ri):
                if isinstance(x, torch.Tensor):
                    values["input:%d" % i] = stats(x)
            for n, p in rm.named_parameters():
                values["parameter:" + n] = stats(p)
            # Random forward: the same model state and inputs, two seeds. The second model is built again
            # (the same seed, the same one forward behind it) rather than copied: a module under
            # torch.nn.utils.weight_norm cannot be deep-copied.
            m1, m2 = rm, run(overrides, "cpu")[1]
            torch.manual_seed(1)
            a = m1(*ri)
            torch.manual_seed(2)
            b = m2(*ri)
            a = list(a) if isinstance(a, (tuple, list)) else [a]
            b = list(b) if isinstance(b, (tuple, list)) else [b]
            random_forward = not all(torch.equal(torch.nan_to_num(x.double(), nan=1e300), torch.nan_to_num(y.double(), nan=1e300))
                                     for x, y in zip(a, b) if isinstance(x, torch.Tensor))
        except BaseException as e:
            fail("values_failed", "running get_inputs() and forward on the CPU at the scaled-down sizes %s failed: %s"
                 % (json.dumps(sizes), exc_text(e)))
    else:
        notes.append("values not sampled: no tensor could be scaled below %d elements (no module-level integer "
                     "moves its shape)" % sample_cap)

    tensors = []
    for ti, t in enumerate(base):
        group, name, dtype, shape = t
        entry = {"group": group, "name": name, "dtype": dtype, "shape": shape, "dims": dims_of(ti)}
        if group == "input":
            i = int(name)
            entry["param_name"] = forward_params[i] if i < len(forward_params) else None
            if dtype == "scalar":
                entry["value"] = inputs[i]
            entry["values"] = values.get("input:%d" % i)
        elif group == "parameter":
            entry["values"] = values.get("parameter:" + name)
        tensors.append(entry)

    emit({"ok": True, "torch": torch.__version__, "file": path, "constants": constants,
          "axis_constants": axis_constants, "not_axes": not_axes,
          "init_inputs": [repr(x) for x in init], "tensors": tensors, "random_forward": random_forward,
          "sampled_at": sampled, "sample_cap": sample_cap, "notes": notes, "ops": sorted(ops)})


if __name__ == "__main__":
    main()
