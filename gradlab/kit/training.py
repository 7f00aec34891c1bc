"""Plumbing shared by the lessons that train on MNIST-like images (mnist, clip, ddp): the cost, the data split and
batch orders, the mlp, and the global norm of a list of gradients. A lesson never imports another lesson; what two
of them need lives here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple

import torch
import torch.nn.functional as F

from gradlab.errors import check

# A 10-class cross-entropy starts at ln 10 ≈ 2.3; above this the weights have blown up (p(correct) < e^-1e6): the run
# has diverged as surely as if the cost were NaN, and stops the same way.
DIVERGED = 1e6


def cross_entropy(z: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """cost = mean_i(−Σ_k y_ik log softmax(z)_ik), the tutorial's cost with one-hot y."""
    return -(y * F.log_softmax(z, dim=1)).sum(dim=1).mean()


def batch_orders(n: int, epochs: int, shuffle: bool, seed: int) -> list[torch.Tensor | None]:
    """One permutation of 0..n-1 per epoch (None: file order). Every variant uses the same orders."""
    if not shuffle:
        return [None] * epochs
    g = torch.Generator().manual_seed(seed)
    return [torch.randperm(n, generator=g) for _ in range(epochs)]


def batches(x: torch.Tensor, y: torch.Tensor, order: torch.Tensor | None, batch_size: int) -> Iterator:
    """The epoch's n // batch_size full batches, one at a time: views in file order (order None, nothing is
    copied), else rows gathered with index_select (the fast path for shuffled batches)."""
    if order is None:
        for s in range(len(x) // batch_size):
            yield x[s * batch_size:(s + 1) * batch_size], y[s * batch_size:(s + 1) * batch_size]
    else:
        for idx in order[:len(x) // batch_size * batch_size].split(batch_size):
            yield x.index_select(0, idx), y.index_select(0, idx)


def eager_epoch(step: Callable, x: torch.Tensor, y: torch.Tensor, batch_size: int) -> Callable:
    """run(order) -> the epoch's costs: STEP called on each batch in turn; the costs stay 0-dim tensors, stacked once
    (no per-step .item(): on a GPU that would wait for every step)."""
    return lambda order: torch.stack([step(xb, yb) for xb, yb in batches(x, y, order, batch_size)])


WARM_UP_STEPS = 3  # eager steps before a CUDA graph is captured (cuBLAS and autograd set themselves up on the first)


def graphed_epoch(step: Callable, params: Sequence[torch.Tensor], x: torch.Tensor, y: torch.Tensor,
                  batch_size: int) -> Callable:
    """run(order) -> the epoch's costs, like eager_epoch, with the whole epoch captured once as a CUDA graph.

    A step of 100 images through a 784×10 model is a few microseconds of GPU work behind tens of kernel launches, so
    an eager loop on a GPU is launch-bound (slower than one CPU thread). Captured, an epoch is one launch: each batch
    is gathered on the device from a static index buffer that holds the epoch's order, each cost written into a
    static buffer; nothing waits for the host (torch.cuda.graphs, "whole-network capture": forward, backward and
    optimizer.step in one graph). The warm-up steps change PARAMS, so their values are put back before training."""
    n = len(x) // batch_size
    order = torch.arange(n * batch_size, device=x.device)  # the static buffer each epoch's order is copied into
    costs = torch.zeros(n, device=x.device)
    saved = [p.detach().clone() for p in params]

    def warm_up() -> None:
        for _ in range(WARM_UP_STEPS):
            step(x[:batch_size], y[:batch_size])

    def epoch() -> None:
        for s, idx in enumerate(order.split(batch_size)):
            costs[s] = step(x.index_select(0, idx), y.index_select(0, idx))

    replay = capture(epoch, warm_up)
    with torch.no_grad():
        for p, v in zip(params, saved, strict=True):
            p.copy_(v)

    def run(epoch_order: torch.Tensor | None) -> torch.Tensor:
        if epoch_order is not None:
            order.copy_(epoch_order[:n * batch_size])
        else:  # file order
            torch.arange(n * batch_size, out=order)
        replay()
        return costs.clone()

    return run


def capture(fn: Callable[[], None], warm_up: Callable[[], None]) -> Callable[[], None]:
    """FN's kernels captured as a CUDA graph; returns replay(). WARM_UP runs first on a side stream, as
    torch.cuda.graph requires of code it has not seen run."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        warm_up()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph.replay


# The tutorial's split. input_data.read_data_sets (tensorflow/contrib/learn/python/learn/datasets/mnist.py, v1.15.0,
# lines 232-238 and 283-286) kept `validation_size=5000` back: `validation_images = train_images[:validation_size]`,
# `train_images = train_images[validation_size:]`. So mnist.train was images 5,000-59,999 of the training file and
# mnist.validation images 0-4,999. A full training file (mnist, fashion-mnist) is split the same way here. The bundled
# mnist-sample is only the first 10,000 images of that file: skipping its first 5,000 would halve it, and no lesson
# validates on anything, so it trains on all 10,000 (images 0-9,999; the tutorial's costs are only shown beside full
# MNIST's). The data line of every run names the images used.
VALIDATION_SIZE = 5000


def train_start(data) -> int:
    """The index of the first training image: 5,000 for a full training file (the tutorial's mnist.train starts
    there), 0 for the bundled sample and for any file of at most 5,000 images."""
    return VALIDATION_SIZE if data.name != "mnist-sample" and len(data.y_train) > VALIDATION_SIZE else 0


class Split(NamedTuple):
    """The slices of a dataset a run trains and tests on, on its device, and the batch order of every epoch."""

    x: torch.Tensor  # (n_train, 784) images
    y: torch.Tensor  # (n_train, 10) one-hot labels
    x_test: torch.Tensor
    labels_test: torch.Tensor  # (n_test,) integer labels
    orders: list  # one permutation per epoch, or None for file order
    notes: list[str]
    images: str  # which training images, for the data line: "images 5,000–59,999, as the tutorial's mnist.train"


def prepare(config, data, device: torch.device) -> Split:
    """train_size training images from train_start(data) on, the first test_size test images (all there are when
    fewer exist, with a note), one-hot labels made once like the tutorial's, and the shared batch orders. Used by
    every lesson that trains on MNIST-like data."""
    notes = []
    start = train_start(data)
    n_train, n_test = min(config.train_size, len(data.y_train) - start), min(config.test_size, len(data.y_test))
    after = f" from image {start:,} on (the tutorial's mnist.train)" if start else ""
    defaults = type(config).__dataclass_fields__  # the data line shows "train 10,000 of 10,000" anyway: a note
    if n_train < config.train_size != defaults["train_size"].default:  # only for a size the user chose
        notes.append(f"--train-size {config.train_size} > the {len(data.y_train) - start:,} training images of "
                     f"{data.name}{after}: using all {n_train:,}")
    if n_test < config.test_size != defaults["test_size"].default:
        notes.append(f"--test-size {config.test_size} > the {len(data.y_test):,} test images: using all {n_test:,}")
    check(config.batch_size <= n_train,
          f"--batch-size {config.batch_size} is larger than the training set ({n_train} images); "
          f"use a smaller --batch-size or a larger --train-size")
    orders = batch_orders(n_train, config.epochs, config.shuffle, config.seed)
    images = f"images {start:,}–{start + n_train - 1:,}"
    if start:  # the tutorial's mnist.train: images 5,000 to the end of the file
        images += ", as the tutorial's mnist.train" if start + n_train == len(data.y_train) else \
            f"; the tutorial's mnist.train starts at {start:,}"
    return Split(x=data.x_train[start:start + n_train].to(device),
                 y=F.one_hot(data.y_train[start:start + n_train], 10).to(torch.float32).to(device),
                 x_test=data.x_test[:n_test].to(device), labels_test=data.y_test[:n_test].to(device),
                 orders=[o if o is None else o.to(device) for o in orders], notes=notes, images=images)


def global_norm(grads: list[torch.Tensor]) -> torch.Tensor:
    """global_norm = sqrt(Σ_i ‖g_i‖²), as tf.global_norm.

    Accumulated in float64: summed in float32, the norm of the mlp's ~270,000 gradients is off by ~1e-6 relatively,
    enough to let a "clipped" gradient end up slightly longer than clip_norm.
    """
    return torch.sqrt(sum(torch.linalg.vector_norm(g, dtype=torch.float64) ** 2 for g in grads))


def clip_by_global_norm(grads: list[torch.Tensor], clip_norm: float) -> list[torch.Tensor]:
    """g_i · clip_norm / max(global_norm, clip_norm): one scale for all, so the direction is kept."""
    norm = global_norm(grads)
    # clip_norm / max(global_norm, clip_norm); a tensor division (a Python number divided by a tensor is computed
    # as number · (1/tensor), which is not exactly 1 when nothing should change)
    scale = norm.new_tensor(clip_norm) / torch.clamp(norm, min=clip_norm)
    return [g * scale for g in grads]


def torch_clip(grads: list[torch.Tensor], clip_norm: float) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """torch.nn.utils.clip_grad_norm_ on copies of GRADS: (its total norm, its clipped gradients)."""
    holders = [torch.zeros_like(g, requires_grad=True) for g in grads]
    for h, g in zip(holders, grads, strict=True):
        h.grad = g.clone()
    total = torch.nn.utils.clip_grad_norm_(holders, clip_norm)  # scales each .grad in place
    return total, [h.grad for h in holders]


def make_model(name: str, seed: int, device: torch.device) -> torch.nn.Module:
    """mlp: 784→256→256→10 with ReLU and PyTorch's default init from SEED; softmax: the tutorial's 784→10 at zero."""
    if name == "softmax":
        model = torch.nn.Linear(784, 10)
        torch.nn.init.zeros_(model.weight)  # the tutorial's zero init
        torch.nn.init.zeros_(model.bias)
    else:
        torch.manual_seed(seed)  # the mlp's initial weights come from the seed
        model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256),
                                    torch.nn.ReLU(), torch.nn.Linear(256, 10))
    return model.to(device)
