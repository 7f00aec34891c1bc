"""On a machine with a CUDA GPU: every lesson runs with --device cuda and its claims hold, mnist trains through its
CUDA graphs, `--device auto` says which device it took, and nccl without a GPU per worker is one line. Skipped where
there is no GPU (tests/conftest.py hides the GPU from every other test)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import REPO, cuda_devices, gpu_env

from gradlab.lessons import LESSONS

pytestmark = pytest.mark.gpu


def gradlab(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gradlab", *args], capture_output=True, text=True, cwd=REPO,
                          env=gpu_env(), timeout=timeout)


@pytest.mark.parametrize("lesson", list(LESSONS))
def test_every_lesson_runs_on_cuda_and_its_claims_hold(lesson, tmp_path):
    out = tmp_path / "r.json"
    proc = gradlab(lesson, "--quick", "--device", "cuda", "--dataset", "mnist-sample", "--offline", "--json",
                   str(out))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert all(c["passed"] for c in result["claims"])
    cpu_only = LESSONS[lesson].config.cpu_only
    assert result["device"].startswith("cpu" if cpu_only else "cuda"), result["device"]


def test_mnist_on_cuda_trains_through_its_graphs_as_on_the_cpu(tmp_path):
    """The three variants, captured as CUDA graphs, end where the CPU's eager loop ends (float32, other kernels)."""
    results = {}
    for device in ("cpu", "cuda"):
        out = tmp_path / f"{device}.json"
        proc = gradlab("mnist", "--epochs", "2", "--dataset", "mnist-sample", "--offline", "--device", device,
                       "--json", str(out))
        assert proc.returncode == 0, proc.stderr[-3000:]
        results[device] = json.loads(out.read_text())
    assert "CUDA graph" in json.dumps(results["cuda"]["tables"])
    for variant, m in results["cpu"]["metrics"].items():
        for a, b in zip(m["epoch_cost"], results["cuda"]["metrics"][variant]["epoch_cost"], strict=True):
            assert abs(a - b) < 1e-4, (variant, a, b)


def test_auto_says_which_device_it_took():
    proc = gradlab("mnist", "--quick", "--dataset", "mnist-sample", "--offline")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "--device auto: using CUDA" in proc.stdout + proc.stderr


def test_nccl_without_a_gpu_per_worker_is_one_line():
    if cuda_devices() >= 2:
        pytest.skip("this machine has a GPU for each of 2 workers")
    proc = gradlab("ddp", "--device", "cuda", "--backend", "nccl", "--workers", "2")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "needs one GPU per worker" in proc.stderr
