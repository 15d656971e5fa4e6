"""Correct: y = x^T in a load_inline CUDA kernel (transpose_kernel.py) on the caller's stream: 32 x 32
tiles through shared memory, each element moved as bits, edge tiles guarded."""
from transpose_kernel import model

ModelNew = model()
