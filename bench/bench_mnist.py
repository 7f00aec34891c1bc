"""Benchmark of `gradlab mnist`: samples/s of each variant's training loop against a naive loop, same run.

The naive baseline is what many tutorials write: DataLoader(torchvision dataset with ToTensor(), batch_size=100,
shuffle=True), the same model and SGD step. Ours keeps the data in memory as tensors and slices batches.
Targets (issue "Foundation"): autograd variants ≥ 12× the naive loop, analytic ≥ 20×, and 10 epochs over
55,000 images in ≤ 3 s of training time per variant. Printed, not asserted: timings depend on the machine.

Data: full MNIST when present in data/MNIST/raw, else Fashion-MNIST (data/FashionMNIST/raw or Debian's
`apt-get install dataset-fashion-mnist`), else the bundled 10,000-image sample.
"""

from __future__ import annotations

import os
import time

import torch
import torch.nn.functional as F
import torchvision
from rich.console import Console
from rich.table import Table

from gradlab import data as datasets
from gradlab.errors import GradlabError
from gradlab.lessons import mnist as M

TARGETS = {"optimizer": 12, "manual": 12, "analytic": 20}
TRAIN = 55_000


def pick_data():
    root = datasets.default_data_dir()
    for name, cls in (("mnist", "MNIST"), ("fashion-mnist", "FashionMNIST")):
        try:
            data, _ = datasets.load(name, root, offline=True)
            return data, getattr(torchvision.datasets, cls), root
        except GradlabError:
            continue
    data, _ = datasets.load("mnist-sample", root, offline=True)
    return data, torchvision.datasets.MNIST, root / ".cache" / "mnist-sample"


def naive_samples_per_s(cls, root, n: int, seed: int = 0) -> float:
    """One epoch of the DataLoader(ToTensor) loop over the first n images, same model and step."""
    torch.manual_seed(seed)
    ds = torch.utils.data.Subset(cls(str(root), train=True, transform=torchvision.transforms.ToTensor()), range(n))
    loader = torch.utils.data.DataLoader(ds, batch_size=100, shuffle=True)
    W, b = torch.nn.Parameter(torch.zeros(784, 10)), torch.nn.Parameter(torch.zeros(10))
    opt = torch.optim.SGD([W, b], lr=0.01)
    start = time.perf_counter()
    for images, labels in loader:
        x, y = images.view(-1, 784), F.one_hot(labels, 10).float()
        cost = M.cross_entropy(x @ W + b, y)
        opt.zero_grad()
        cost.backward()
        opt.step()
    return n / (time.perf_counter() - start)


def main() -> None:
    console = Console(highlight=False)
    data, cls, root = pick_data()
    n = min(TRAIN, len(data.y_train))
    load = os.getloadavg()[0]
    console.print(f"bench: {data.name} ({n:,} training images), torch {torch.__version__}, "
                  f"{torch.get_num_threads()} threads, {os.cpu_count()} cores, load average {load:.2f}")
    if load > 1.0:
        console.print("[yellow]note:[/] the machine is busy; 2-thread torch slows 3–8× when a core is taken")
    naive = naive_samples_per_s(cls, root, n)
    table = Table(title=f"gradlab mnist: 10 epochs × {n:,} images vs the naive DataLoader loop", title_justify="left")
    for col in ("loop", "samples/s", "× naive", "target", "10 epochs (s)", "≤ 3 s"):
        table.add_column(col, justify="right" if col != "loop" else "left")
    table.add_row("naive DataLoader(ToTensor)", f"{naive:,.0f}", "1.0", "", f"{10 * n / naive:.1f}", "")
    for variant in M.VARIANTS:
        result = M.run(M.Config(variant=variant, train_size=n), data)
        m = result.metrics[variant]
        ratio = m["samples_per_s"] / naive
        table.add_row(variant, f"{m['samples_per_s']:,.0f}", f"{ratio:.1f}",
                      f"≥ {TARGETS[variant]}× {'✓' if ratio >= TARGETS[variant] else '✗'}",
                      f"{m['wall_s']:.2f}", "✓" if m["wall_s"] <= 3 else "✗")
    console.print(table)


if __name__ == "__main__":
    main()
