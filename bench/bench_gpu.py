"""Benchmark of `gradlab mnist` on a GPU against the CPU, in the same run, on the tutorial's workload (55,000 images,
batch 100, 10 epochs): each variant's samples/s on one CPU thread (gradlab's policy), on CUDA as the lesson trains
there (each epoch one CUDA graph) and on CUDA eager (a kernel launch per operation, for comparison). Target: the
GPU ≥ 5× the CPU. Printed, not asserted, and written to bench/results/gpu.json (bench/record.py). Without a CUDA
GPU it says so, in the JSON too (no figures), and stops.

Data: full MNIST when present, else Fashion-MNIST, else the bundled 10,000-image sample (bench_mnist.pick_data).
"""

from __future__ import annotations

import time

import record
import torch
from rich.console import Console
from rich.table import Table

from gradlab.kit import threads
from gradlab.kit import training as T
from gradlab.lessons.mnist import lesson as M

TARGET = 5
TRAIN = 55_000


def samples_per_s(data, device: str, n: int, graphed: bool = True) -> dict[str, float]:
    """samples/s of each variant's training loop (the lesson's own timing) on DEVICE."""
    runner = M.epoch_runner
    if not graphed:  # the eager loop on the GPU too
        M.epoch_runner = lambda step, params, x, y, b, stored=None: T.eager_epoch(step, x, y, b)
    try:
        return {v: M.run(M.Config(variant=v, train_size=n), data, torch.device(device)).metrics[v]["samples_per_s"]
                for v in M.VARIANTS}
    finally:
        M.epoch_runner = runner


def main() -> None:
    from bench_mnist import pick_data

    console = Console(highlight=False, width=150)
    header, start = record.machine(), time.perf_counter()
    if not torch.cuda.is_available():
        console.print("bench gpu: no CUDA GPU here; skipped")
        console.print("wrote", record.write("gpu", {**header, "command": record.command(), "wall_s": 0.0,
                                                    "skipped": "no CUDA GPU on this machine"}))
        return
    data, _, _ = pick_data()
    n = min(TRAIN, len(data.y_train))
    threads.apply(threads.choose(None)[0])
    console.print(f"bench gpu: {data.name} ({n:,} training images, 10 epochs), torch {torch.__version__}, "
                  f"{torch.cuda.get_device_name(0)} vs {torch.get_num_threads()} CPU thread(s)")
    cpu = samples_per_s(data, "cpu", n)
    graphed = samples_per_s(data, "cuda", n)
    eager = samples_per_s(data, "cuda", n, graphed=False)
    table = Table(title="samples/s of each training loop, CPU vs CUDA, same run", title_justify="left")
    for col in ("variant", "CPU", "CUDA (graphs)", "× CPU", f"≥ {TARGET}×", "CUDA eager", "× CPU "):
        table.add_column(col, justify="left" if col == "variant" else "right")
    for v in M.VARIANTS:
        ratio = graphed[v] / cpu[v]
        table.add_row(v, f"{cpu[v]:,.0f}", f"{graphed[v]:,.0f}", f"{ratio:.1f}", "✓" if ratio >= TARGET else "✗",
                      f"{eager[v]:,.0f}", f"{eager[v] / cpu[v]:.2f}")
    console.print(table)
    console.print("wrote", record.write("gpu", {
        **header, "load_average_after": record.load(), "command": record.command(),
        "wall_s": round(time.perf_counter() - start, 1), "data": data.name, "train_images": n, "epochs": 10,
        "cpu_threads": torch.get_num_threads(), "target": TARGET,
        "samples_per_s": {v: {"cpu": round(cpu[v], 1), "cuda_graphs": round(graphed[v], 1),
                              "cuda_eager": round(eager[v], 1)} for v in M.VARIANTS}}))


if __name__ == "__main__":
    main()
