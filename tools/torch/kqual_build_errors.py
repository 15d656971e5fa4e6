"""The compiler's first error from a failed build of a PyTorch submission's own kernels (a load_inline /
cpp_extension build, a Triton compilation): what `build_failed` tells its author. No PyTorch import, so
it is tested on machines without it (tests/bench/build_errors_test.py)."""
import os
import re
import subprocess


def build_output(e):
    """Everything a failed build said: the exception's text, and the compiler output its causes hold
    (PyTorch raises "Error building extension 'NAME'" from ninja's CalledProcessError, whose output it
    does not always copy)."""
    parts, seen = [], set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        parts.append(str(e))
        for attr in ("output", "stdout", "stderr"):
            v = getattr(e, attr, None)
            if isinstance(v, bytes):
                v = v.decode(errors="replace")
            if isinstance(v, str) and v:
                parts.append(v)
        e = e.__cause__ or e.__context__
    return "\n".join(parts)


def rebuild_output(text):
    """Where a failed load_inline build left no compiler output in its exception: ninja run once more in
    the extension's build folder (TORCH_EXTENSIONS_DIR/NAME, kqual's folder for this submission), for the
    compiler's own messages."""
    m = re.search(r"Error building extension '([^']+)'", text)
    root = os.environ.get("TORCH_EXTENSIONS_DIR")
    if not m or not root or not os.path.isdir(os.path.join(root, m.group(1))):
        return ""
    try:
        p = subprocess.run(["ninja", "-v"], cwd=os.path.join(root, m.group(1)), capture_output=True, text=True, timeout=300)
        return (p.stdout or "") + "\n" + (p.stderr or "")
    except Exception:
        return ""


def build_failure(e):
    """The compiler's first error where e is a failed build of the submission's own kernels (a
    load_inline / cpp_extension build, a Triton compilation), else None."""
    text = build_output(e)
    name = type(e).__name__
    if not ("Error building extension" in text or name in ("CalledProcessError", "CompilationError", "CompileTimeAssertionFailure")
            or "ptxas" in text and "error" in text.lower()):
        return None
    first = first_error_line(text)
    if first is None and "Error building extension" in text:
        first = first_error_line(rebuild_output(text))
    if first is not None:
        return first
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return (lines[0] if lines else name)[:500]


def first_error_line(text):
    """The first line of a compiler's output that reports an error, or None."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        low = ln.lower()
        if (": error" in low or "error:" in low or low.startswith("error")) and "error building extension" not in low:
            return ln[:500]
    return None
