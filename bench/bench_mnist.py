"""Benchmark of `gradlab mnist` on the tutorial's full workload: each variant's training loop against a naive loop,
quiet and beside two busy programs, measured in the same run.

The naive baseline is what many tutorials write: DataLoader(torchvision dataset with ToTensor(), batch_size=100,
shuffle=True), the same model and SGD step. Ours keeps the data in memory as tensors and gathers batches, with
gradlab's thread policy (one thread, gradlab/kit/threads.py) and its collector's settings (gradlab/kit/heap.py), and
for comparison with one thread per CPU; each row's naive loop runs in the same run with that row's thread count, so
a ratio compares two loops on equal terms.
Targets: autograd variants ≥ 12× the naive loop (issue "In students' hands"), analytic ≥ 20× (issue #42: met there
on 2026-11-28, the autograd variants not), and beside two busy programs no more than 2× slower than quiet. Printed,
not asserted: timings depend on the machine.
Written to bench/results/mnist.json (bench/record.py) with the machine and its load, which the docs render.

Data: full MNIST when present in data/MNIST/raw, else Fashion-MNIST (data/FashionMNIST/raw or Debian's
`apt-get install dataset-fashion-mnist`), else the bundled 10,000-image sample; `--dataset mnist-sample` takes the
sample even where a full set is present (a shorter run on a busy machine).

    python bench/bench_mnist.py [--dataset mnist|fashion-mnist|mnist-sample]
"""

from __future__ import annotations

import argparse
import os
import shlex
import time

import record
import torch
import torch.nn.functional as F
import torchvision
from bench_threads import SPIN, busy
from PIL import Image
from rich.console import Console
from rich.table import Table

from gradlab.errors import GradlabError
from gradlab.kit import data as datasets
from gradlab.kit import heap, threads
from gradlab.lessons.mnist import lesson as M

TARGETS = {"optimizer": 12, "manual": 12, "analytic": 20}
TRAIN = 55_000


def pick_data(only: str | None = None):
    root = datasets.default_data_dir()
    for name, cls in (("mnist", "MNIST"), ("fashion-mnist", "FashionMNIST")):
        if only not in (None, name):
            continue
        try:
            data, _ = datasets.load(name, root, offline=True)
            return data, getattr(torchvision.datasets, cls), root
        except GradlabError as e:
            if only == name:
                raise SystemExit(f"bench_mnist: --dataset {name}: {e}") from None
    data, _ = datasets.load("mnist-sample", root, offline=True)
    return data, None, None


class AsTorchvision(torch.utils.data.Dataset):
    """The bundled sample (no torchvision folder) served as torchvision.datasets.MNIST serves its images: each item a
    uint8 PIL image made from its 28×28 array, then the transform (MNIST.__getitem__'s own steps)."""

    def __init__(self, data, transform) -> None:
        self.images = (data.x_train * 255).round().to(torch.uint8).view(-1, 28, 28)
        self.targets, self.transform = data.y_train, transform

    def __len__(self) -> int:
        return len(self.targets)

    def __getitem__(self, i: int):
        return self.transform(Image.fromarray(self.images[i].numpy(), mode="L")), int(self.targets[i])


def naive_samples_per_s(data, cls, root, n: int, seed: int = 0) -> float:
    """One epoch of the DataLoader(ToTensor) loop over the first n images, same model and step."""
    torch.manual_seed(seed)
    to_tensor = torchvision.transforms.ToTensor()
    full = cls(str(root), train=True, transform=to_tensor) if cls else AsTorchvision(data, to_tensor)
    ds = torch.utils.data.Subset(full, range(n))
    loader = torch.utils.data.DataLoader(ds, batch_size=100, shuffle=True)
    W, b = torch.nn.Parameter(torch.zeros(784, 10)), torch.nn.Parameter(torch.zeros(10))
    opt = torch.optim.SGD([W, b], lr=0.01)
    start = time.perf_counter()
    for images, labels in loader:
        cost = F.cross_entropy(images.view(-1, 784) @ W + b, labels)  # the same cost as our autograd loops
        opt.zero_grad()
        cost.backward()
        opt.step()
    return n / (time.perf_counter() - start)


def ours(data, n: int, n_threads: int) -> dict[str, float]:
    """samples/s of each variant's 10-epoch training loop (the lesson's own timing) with N_THREADS threads."""
    threads.apply(n_threads)
    return {v: M.run(M.Config(variant=v, train_size=n), data).metrics[v]["samples_per_s"] for v in M.VARIANTS}


def main() -> None:
    heap.own_process()  # as the `gradlab mnist` command sets Python's collector (gradlab/kit/heap.py), torch loaded
    heap.imported()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", choices=("mnist", "fashion-mnist", "mnist-sample"),
                        help="the data to train on (default: the first of these present)")
    only = parser.parse_args().dataset
    console = Console(highlight=False, width=150)
    header, start = record.machine(), time.perf_counter()
    data, cls, root = pick_data(only)
    n = min(TRAIN, len(data.y_train))
    cpus = os.cpu_count() or 1
    policy, why = threads.choose(None)
    console.print(f"bench mnist: {data.name} ({n:,} training images, 10 epochs), torch {torch.__version__}, {cpus} "
                  f"CPUs, load average {os.getloadavg()[0]:.2f}; gradlab's policy: {policy} thread ({why})")
    default_threads = torch.get_num_threads()
    runs = {}
    for label, k in ((f"{policy} (gradlab)", policy), (f"{cpus} (torch's default)", cpus)):
        threads.apply(k)
        runs[label] = {"threads": k, "naive": naive_samples_per_s(data, cls, root, n), "quiet": ours(data, n, k)}
        with busy(2):
            runs[label]["busy"] = ours(data, n, k)
    threads.apply(default_threads)
    table = Table(title="samples/s of each training loop, quiet and beside 2 busy programs (the naive loop: quiet, "
                        "same run, same threads)", title_justify="left")
    for col in ("loop", "threads", "naive samples/s", "quiet samples/s", "× naive", "target", "+2 busy samples/s",
                "busy slowdown", "≤ 2×"):
        table.add_column(col, justify="left" if col in ("loop", "threads") else "right")
    for label, r in runs.items():
        for v in M.VARIANTS:
            ratio, slow = r["quiet"][v] / r["naive"], r["quiet"][v] / r["busy"][v]
            table.add_row(v, label, f"{r['naive']:,.0f}", f"{r['quiet'][v]:,.0f}", f"{ratio:.1f}",
                          f"≥ {TARGETS[v]}× {'✓' if ratio >= TARGETS[v] else '✗'}", f"{r['busy'][v]:,.0f}",
                          f"{slow:.2f}×", "✓" if slow <= 2 else "✗")
    console.print(table)
    console.print("wrote", record.write("mnist", {
        **header, "load_average_after": record.load(), "command": record.command(),
        "wall_s": round(time.perf_counter() - start, 1), "data": data.name, "train_images": n, "epochs": 10,
        "batch": 100, "busy_programs": 2, "busy_program": shlex.join(SPIN[1:]), "policy_why": why,
        "naive_samples_per_s": round(runs[f"{policy} (gradlab)"]["naive"], 1), "targets": TARGETS,
        "slowdown_target": 2,
        "runs": [{"label": label, "threads": r["threads"], "naive_samples_per_s": round(r["naive"], 1),
                  **{kind: {v: round(r[kind][v], 1) for v in M.VARIANTS} for kind in ("quiet", "busy")}}
                 for label, r in runs.items()]}))


if __name__ == "__main__":
    main()
