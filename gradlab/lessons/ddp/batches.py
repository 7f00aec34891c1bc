"""gradlab ddp, what every process shares: the global batches, the model, how a batch is split, and how two
gradients are compared. Used by this process's reference (ddp_single) and by every rank (ddp_ranks)."""

from __future__ import annotations

import math

import torch

from gradlab.errors import check
from gradlab.kit.training import batch_orders, cross_entropy, make_model
from gradlab.lessons.ddp.settings import Config

DTYPES = {"float32": torch.float32, "float64": torch.float64}


def micro_batch_sizes(batch: int, parts: int, uneven: bool) -> list[int]:
    """Equal parts; or, uneven, each part the largest power of two that leaves at least one sample for each part
    still to come, the last part the rest: 100 in 3 → 64, 32, 4."""
    if not uneven:
        return [batch // parts] * parts
    sizes, left = [], batch
    for k in range(parts - 1):
        room = left - (parts - 1 - k)  # keep one sample for every later part
        sizes.append(1 << (room.bit_length() - 1))
        left -= sizes[-1]
    return [*sizes, left]


def shard_sizes(batch: int, workers: int) -> list[int]:
    """The global batch over the workers as evenly as it goes: 100 over 3 → 34, 33, 33."""
    return [batch // workers + (1 if r < batch % workers else 0) for r in range(workers)]


def summed_cross_entropy(z: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Σ_i ℓ_i: the per-sample losses added, not averaged (the caller divides by the global count)."""
    return -(y * torch.log_softmax(z, dim=1)).sum()


def full_batch_grads(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> list[torch.Tensor]:
    return list(torch.autograd.grad(cross_entropy(model(x), y), list(model.parameters())))


class ReluSigns:
    """Which inputs of each ReLU of MODEL were > 0, for every sample of every forward pass since the last take().

    Two computations of the same samples that agree on these signs differ by rounding only. Where a ReLU input sits
    within rounding of 0, a forward pass on 12 samples and one on 100 (whose last bits may differ, depending
    on the machine) can disagree on its sign: a unit is on in one and off in the other, and the gradients then
    differ by far more than rounding. The equality claims leave such steps out and count them."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.layers = [m for m in model.modules() if isinstance(m, torch.nn.ReLU)]
        self.calls: list[torch.Tensor] = []
        for m in self.layers:
            m.register_forward_hook(lambda module, inputs, output: self.calls.append(output > 0))

    def take(self) -> list[torch.Tensor]:
        """Per ReLU layer, the signs of all rows since the last take(), in the order the rows went through."""
        calls, self.calls, n = self.calls, [], len(self.layers)
        return [torch.cat(calls[i::n]) for i in range(n)]


def same_signs(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    return all(torch.equal(u, v) for u, v in zip(a, b, strict=True))


def flat(model: torch.nn.Module) -> torch.Tensor:
    return torch.nn.utils.parameters_to_vector(model.parameters()).detach().clone()


def new_model(config: Config, device: torch.device) -> torch.nn.Module:
    """gradlab clip's mlp (784→256→256→10), the same initial weights for every run and every worker."""
    return make_model("mlp", config.seed, device).to(DTYPES[config.dtype])


class Batches:
    """The STEPS global batches every run trains on, in the seeded order of gradlab mnist and clip (another pass
    starts when the data runs out). Kept as the images plus a (steps, B) index, gathered a batch at a time, so a
    long run costs 8 bytes per sample and step, not 3 KB."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor, index: torch.Tensor) -> None:
        self.x, self.y, self.index = x, y, index

    def __len__(self) -> int:
        return len(self.index)

    def __getitem__(self, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.x.index_select(0, self.index[step]), self.y.index_select(0, self.index[step])

    def __iter__(self):
        return (self[s] for s in range(len(self)))

    def to(self, device: torch.device) -> Batches:
        return Batches(self.x.to(device), self.y.to(device), self.index.to(device))


def global_batches(config: Config, data, device: torch.device) -> Batches:
    n = len(data.y_train)
    check(config.batch_size <= n, f"--batch-size {config.batch_size} is larger than the {n:,} training images of "
                                  f"{data.name}; use a smaller --batch-size")
    x = data.x_train.to(device, DTYPES[config.dtype])
    y = torch.nn.functional.one_hot(data.y_train, 10).to(device, DTYPES[config.dtype])
    per_pass = n // config.batch_size
    orders = batch_orders(n, math.ceil(config.steps / per_pass), True, config.seed)
    index = torch.cat([o[:per_pass * config.batch_size].view(per_pass, config.batch_size) for o in orders])
    return Batches(x, y, index[:config.steps].to(device))
