"""Which of a submission's parameters stand for the problem's (tools/torch/submission_worker.py): kqual
gives both modules the same parameter values, as inputs, by the problem's names. A solution that
declares its own parameters under other names (nn.Conv3d's "conv3d.weight" as its own "weight") gets
each missing one mapped to the first of its parameters not already taken that has the same shape, in the
order it registered them; a problem parameter no parameter of that shape is left for stays missing.
Pure Python (no torch), so that it is tested on a machine without PyTorch."""


def map_parameters(wanted, shapes, own):
    """wanted: {contract input name: problem parameter name}; shapes: {contract input name: shape};
    own: [(submission parameter or buffer name, shape)] in registration order.
    Returns (mapping {contract input name: submission name}, [problem names left missing],
    ["problem name -> submission name" for each mapped by shape])."""
    names = [n for n, _ in own]
    taken = {p for p in wanted.values() if p in names}
    mapping, missing, by_shape = {}, [], []
    for cname, p in wanted.items():
        if p in names:
            mapping[cname] = p
            continue
        want = [int(x) for x in shapes.get(cname, [])]
        pick = next((n for n, s in own if n not in taken and [int(x) for x in s] == want), None)
        if pick is None:
            missing.append(p)
            continue
        taken.add(pick)
        mapping[cname] = pick
        by_shape.append("%s -> %s" % (p, pick))
    return mapping, missing, by_shape
