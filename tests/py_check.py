"""What the Python tests run by CTest share (standard library only): tools/torch on the import path, and
expect(), which prints each expectation that does not hold and counts it; done() exits 1 when one did not."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "torch"))
fails = 0


def expect(what, got, want):
    global fails
    if got != want:
        fails += 1
        print("FAIL %s:\n  got  %r\n  want %r" % (what, got, want))


def done():
    print("%d failure(s)" % fails)
    sys.exit(1 if fails else 0)
