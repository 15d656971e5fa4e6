#!/usr/bin/env python3
"""Device smoke test of libkqual_record.so (the recorder injected into PyTorch workers): starts a child
Python with CUDA_INJECTION64_PATH set, as kqual starts a submission worker, and prints what the record
holds. Usage: record_smoke.py LIB [--overhead]. Not a CTest (the GPU suites judge the recorder through
kqual); run by scripts/device-run's `record` step."""
import collections, os, subprocess, sys, tempfile, threading, time

CHILD = r'''
import ctypes, os, sys, time, torch
torch.cuda.init()
lib = ctypes.CDLL(sys.argv[1], mode=os.RTLD_NOLOAD) if sys.argv[1] != "-" else None
def mark(label, s):
    if lib: lib.kqual_record_mark(label.encode(), ctypes.c_ulonglong(s.cuda_stream))
def flush(t):
    if lib: lib.kqual_record_flush(t.encode())
print("active", lib.kqual_record_active() if lib else None, file=sys.stderr)
caller = torch.cuda.Stream()
x = torch.randn(1 << 20, device="cuda"); a = torch.randn(512, 512, device="cuda")
torch.cuda.synchronize()
with torch.cuda.stream(caller):
    mark("call1-begin", caller)
    y = x + 1; z = a @ a
    mark("call1-end", caller)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        w = x * 2
    mark("call2-begin", caller)
    with torch.cuda.stream(torch.cuda.default_stream()):
        v = x * 3     # on the legacy default stream
    h = x.cpu(); x.copy_(h.cuda())
    mark("call2-end", caller)
torch.cuda.synchronize()
try:
    import triton, triton.language as tl
    @triton.jit
    def k(X, Y, n, B: tl.constexpr):
        i = tl.program_id(0) * B + tl.arange(0, B); m = i < n
        tl.store(Y + i, tl.load(X + i, mask=m) + 1, mask=m)
    yy = torch.empty_like(x)
    with torch.cuda.stream(caller):
        mark("triton-begin", caller); k[(x.numel() // 1024,)](x, yy, x.numel(), B=1024); mark("triton-end", caller)
    f = torch.compile(lambda t: torch.relu(t) + 1)
    f(x)
    torch.cuda.synchronize()
    with torch.cuda.stream(caller):
        mark("compiled-begin", caller); f(x); mark("compiled-end", caller)
except Exception as e:
    print("triton/compile skipped:", e, file=sys.stderr)
torch.cuda.synchronize()
t0 = time.perf_counter()
for _ in range(2000):
    x.add_(1)
torch.cuda.synchronize()
print("loop_us_per_launch %.2f" % ((time.perf_counter() - t0) / 2000 * 1e6), file=sys.stderr)
flush("end")
'''


def run(lib, inject):
    d = tempfile.mkdtemp(prefix="kqual-record-smoke-")
    fifo, key = os.path.join(d, "record.fifo"), os.path.join(d, "key")
    os.mkfifo(fifo, 0o600)
    with open(key, "wb") as f:
        f.write(os.urandom(16))
    env = dict(os.environ)
    if inject:
        env.update(CUDA_INJECTION64_PATH=lib, KQUAL_RECORD_FIFO=fifo, KQUAL_RECORD_KEY=key)
    rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    lines = []

    def reader():
        import select
        buf = b""
        while True:
            r, _, _ = select.select([rfd], [], [], 0.2)
            if r:
                chunk = os.read(rfd, 1 << 16)
                if not chunk and done[0]:
                    break
                buf += chunk
            elif done[0]:
                break
        lines.extend(buf.decode(errors="replace").splitlines())

    done = [False]
    t = threading.Thread(target=reader)
    t.start()
    t0 = time.time()
    child = os.path.join(d, "child.py")
    with open(child, "w") as f:
        f.write(CHILD)
    p = subprocess.run([sys.executable, child, lib if inject else "-"], env=env, capture_output=True, text=True, timeout=240)
    done[0] = True
    t.join()
    print("== inject=%s rc=%d %.1f s" % (inject, p.returncode, time.time() - t0))
    print(p.stderr[-3000:])
    return lines


def main():
    lib = os.path.abspath(sys.argv[1])
    lines = run(lib, True)
    kinds = collections.Counter(l.split("\t")[1] for l in lines if "\t" in l)
    print("lines", len(lines), dict(kinds))
    n_o = 0
    for l in lines:
        f = l.split("\t")
        n_o += f[1] == "O"
        if f[1] in ("H", "C", "X", "F", "E") or (f[1] == "O" and n_o <= 12):
            print(l[:300])
    launches = {}
    for l in lines:
        f = l.split("\t")
        if f[1] == "L":
            launches[f[2]] = f
    marks = [(l.split("\t")[2], int(l.split("\t")[3])) for l in lines if l.split("\t")[1] == "X"]
    def region(corr):
        c = int(corr)
        name = "before"
        for label, at in marks:
            if c > at:
                name = "after " + label
        return name
    shown = collections.Counter()
    for l in lines:
        f = l.split("\t")
        if f[1] in ("K", "M", "S"):
            r = region(f[2])
            shown[r] += 1
            if shown[r] > 6:
                continue
            L = launches.get(f[2])
            print(r, "|", f[1], "corr", f[2], "stream", f[3] if f[1] == "K" else f[5 if f[1] == "M" else 4], (f[13][:70] if f[1] == "K" else ""),
                  "| api", L[5] if L else None, "| origin", (L[7][-50:] if L else None), "| py", (L[8][:240] if L else None))
    print("per region", dict(shown))
    kern = {l.split("\t")[2] for l in lines if l.split("\t")[1] == "K"}
    missing = [c for c, f in launches.items() if "Launch" in f[5] and "Graph" not in f[5] and f[4] == "0" and c not in kern]
    print("launches", sum(1 for f in launches.values() if "Launch" in f[5]), "without kernel record", len(missing), missing[:10])
    if "--overhead" in sys.argv:
        run(lib, False)


main()
