# PyTorch reference of residual_add_relu_torch: what a PyTorch user writes. kqual evaluates it on
# float64 tensors in its reference process (exact for a sum of two f32 or bf16 values, rounded once
# by kqual), and times it on the GPU in the benchmark dtype as the eager and compiled baselines.
import torch


def residual_add_relu(x, r):
    return torch.relu(x + r)
