#!/usr/bin/env python3
"""tools/torch/kqual_parameters.py without PyTorch: a solution's parameters stand for the problem's by
name, else by shape in registration order; one no parameter of that shape is left for stays missing."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from py_check import done, expect  # noqa: E402
from kqual_parameters import map_parameters  # noqa: E402

# By name: nothing moved.
expect("by name", map_parameters({"w": "conv.weight"}, {"w": [4, 3]}, [("conv.weight", [4, 3]), ("conv.bias", [4])]),
       ({"w": "conv.weight"}, [], []))
# KernelBench L1_66's shape: nn.Conv3d's weight declared as the solution's own "weight", beside a bias.
expect("by shape", map_parameters({"w": "conv3d.weight"}, {"w": [4, 1, 3, 5, 7]},
                                  [("weight", [4, 1, 3, 5, 7]), ("bias", [4])]),
       ({"w": "weight"}, [], ["conv3d.weight -> weight"]))
# Two of one shape: in registration order, each taken once; one already matched by name is not reused.
expect("order", map_parameters({"a": "l1.weight", "b": "l2.weight", "c": "l3.weight"}, {"a": [8, 8], "b": [8, 8], "c": [8, 8]},
                               [("l3.weight", [8, 8]), ("w_first", [8, 8]), ("w_second", [8, 8])]),
       ({"a": "w_first", "b": "w_second", "c": "l3.weight"}, [], ["l1.weight -> w_first", "l2.weight -> w_second"]))
# No parameter of the shape: missing, named.
expect("missing", map_parameters({"w": "fc.weight"}, {"w": [10, 20]}, [("weight", [20, 10])]), ({}, ["fc.weight"], []))
done()
