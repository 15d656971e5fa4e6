"""The axes and sizes at which tools/torch/kernelbench_capture.py runs a KernelBench problem on the CPU: its
module-level size constants scaled down until no tensor exceeds a cap, then grown back where the
forward refuses sizes that small (a convolution whose output would be empty, a BatchNorm in training
mode over one value per channel, an output padding no longer below a stride that was halved).
Which constants may vary at all is decided first (constants_to_hold). Pure Python (no PyTorch), so
that tests/import/kernelbench_scaledown_test.py runs it on the CPU."""


def constants_to_hold(movers, irregular):
    """The constants that cannot be axes: every one that moves a dim in `irregular` (a dim moved by
    several constants, or by one non-linearly, which the contract holds fixed). movers: {dim: {constant}}."""
    hold = set()
    for dim in irregular:
        hold |= set(movers.get(dim, ()))
    return hold


def shrink(values, mins, elements_at, cap):
    """Halve the largest constant that stays at or above its minimum until elements_at(sizes) <= cap
    or nothing can shrink. values, mins: {constant: int}; elements_at(sizes) -> the largest tensor."""
    sizes = dict(values)
    while elements_at(sizes) > cap:
        shrinkable = [c for c in sizes if sizes[c] // 2 >= max(mins.get(c, 1), 1) and sizes[c] > 1]
        if not shrinkable:
            break
        c = max(shrinkable, key=lambda k: sizes[k])
        sizes[c] //= 2
    return sizes


def back_off(sizes, values, elements_at, cap, attempt, max_runs=40):
    """The first sizes at which attempt(sizes) succeeds (returns None; otherwise it returns the error's
    text), starting from `sizes` and growing the constants that were scaled down back toward their
    values, never past elements_at(...) <= cap. Each round tries every shrunk constant doubled alone,
    the most shrunk first; when none is enough alone, all that fit are doubled together and the next
    round starts there. At most max_runs attempts.

    Returns (sizes, error, runs, tried): error None when some sizes worked (then sizes are those),
    else the first error met (the one at the starting sizes) and the last sizes tried."""
    first = attempt(sizes)
    runs, tried = 1, [dict(sizes)]
    if first is None:
        return sizes, None, runs, tried

    def doubled(sz, c):
        nxt = dict(sz)
        nxt[c] = min(values[c], sz[c] * 2)
        return nxt

    while runs < max_runs:
        shrunk = sorted((c for c in sizes if sizes[c] < values[c]), key=lambda c: (sizes[c] / values[c], c))
        fits = [c for c in shrunk if elements_at(doubled(sizes, c)) <= cap]
        if not fits:
            break
        for c in fits:
            if runs >= max_runs:
                break
            nxt = doubled(sizes, c)
            runs += 1
            tried.append(nxt)
            if attempt(nxt) is None:
                return nxt, None, runs, tried
        together = dict(sizes)
        for c in fits:  # the most shrunk first, as long as the whole still fits
            grown = doubled(together, c)
            if elements_at(grown) <= cap:
                together = grown
        if together == sizes or runs >= max_runs:
            break
        sizes = together
        runs += 1
        tried.append(dict(sizes))
        if attempt(sizes) is None:
            return sizes, None, runs, tried
    return sizes, first, runs, tried
