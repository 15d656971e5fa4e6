"""Known-broken (host_compute): the inputs copied to the host, the sum computed there, the result copied
back: right values, no kernel of its own."""
import torch


class ModelNew(torch.nn.Module):
    def forward(self, x, r):
        return torch.relu(x.cpu() + r.cpu()).to(x.device)
