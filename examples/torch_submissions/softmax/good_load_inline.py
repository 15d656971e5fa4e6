"""Correct: softmax along each row in a load_inline CUDA kernel (softmax_kernel.py) on the caller's
stream: max, sum of exp(x - max) and the outputs in float32, output rounded once to the dtype."""
from softmax_kernel import model

ModelNew = model()
