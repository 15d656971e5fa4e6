#!/usr/bin/env python3
"""tools/torch/kqual_build_errors.py on a machine without PyTorch: the compiler's first error is found in
the output ninja's failure carries, PyTorch's own "Error building extension" line is never taken for it,
and an exception that is not a build is not one."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "torch"))
from kqual_build_errors import build_failure  # noqa: E402


class NinjaFailed(Exception):
    def __init__(self, output):
        super().__init__("Command '['ninja', '-v']' returned non-zero exit status 1.")
        self.output = output


def raised(outer, cause=None):
    try:
        try:
            if cause:
                raise cause
            raise RuntimeError("no cause")
        except Exception as c:
            raise RuntimeError(outer) from (c if cause else None)
    except RuntimeError as e:
        return e


fails = 0


def expect(got, want):
    global fails
    if got != want:
        fails += 1
        print("FAIL: got %r, want %r" % (got, want))


# The compiler's error from the cause's output (bytes), not PyTorch's summary line.
out = b"[1/3] nvcc -c cuda.cu\n/tmp/ext/cuda.cu(12): error: identifier \"foo\" is undefined\n1 error detected\n"
expect(build_failure(raised("Error building extension 'argmin_cuda'", NinjaFailed(out))),
       '/tmp/ext/cuda.cu(12): error: identifier "foo" is undefined')
# The output in the message itself, as other PyTorch versions put it.
expect(build_failure(raised("Error building extension 'x': main.cpp:3:1: error: expected ';' before '}' token")),
       "Error building extension 'x': main.cpp:3:1: error: expected ';' before '}' token")
# No output anywhere and no build folder to ask: the summary line, said as it is.
os.environ.pop("TORCH_EXTENSIONS_DIR", None)
expect(build_failure(raised("Error building extension 'gone'")), "Error building extension 'gone'")
# Not a build.
expect(build_failure(raised("shape mismatch")), None)
print("build_errors_test: %d failure(s)" % fails)
sys.exit(1 if fails else 0)
