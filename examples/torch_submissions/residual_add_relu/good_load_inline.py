"""Correct: relu(x + r) in a load_inline CUDA kernel (add_relu_kernel.py) on the caller's stream."""
from add_relu_kernel import ModelNew  # noqa: F401
