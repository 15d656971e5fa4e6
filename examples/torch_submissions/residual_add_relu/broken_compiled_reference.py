"""Known-broken (reference_called): the problem's own expression compiled by torch.compile, with
Inductor's descriptive kernel names switched off: Inductor's Triton kernels do the work under generic
names."""
import torch
import torch._inductor.config as inductor_config

inductor_config.triton.descriptive_names = False
_compiled = torch.compile(lambda x, r: torch.relu(x + r), dynamic=True)


class ModelNew(torch.nn.Module):
    def forward(self, x, r):
        return _compiled(x, r)
