"""Install gradlab's wheel as a student would, into a fresh venv outside the repository, and use it.

    python scripts/check_wheel.py dist/gradlab_teach-<version>-py3-none-any.whl     (`make wheel-check`)

1. A fresh venv gets a CPU-only torch first, as the README tells a student on a laptop without an NVIDIA GPU
   ($GRADLAB_CPU_TORCH, default `torch==2.13.0`: the CPU build this project's machines carry; elsewhere e.g.
   "torch --index-url https://download.pytorch.org/whl/cpu").
2. The notebooks' own first cell (read from the wheel) installs gradlab from the wheel lying beside it, as on Colab.
   pip must keep that torch: no CUDA build, no nvidia-* package, no torchvision.
3. From a folder outside the repository: a preset by name, three lessons, `gradlab notebooks`, and the one-line
   error that full MNIST needs torchvision (with a +cpu torch: the command that keeps it, from the CPU index).
The wheel must not carry the model answers (exercises/answers.py) nor the teacher kit (teacher/graded/).
Prints the venv's size and the time of each install; exits 1 at the first thing that is not as it should be.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path


def run(cmd: list[str], cwd: Path, expect: int = 0, **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, **kw)
    if proc.returncode != expect:
        sys.exit(f"check_wheel: `{shlex.join(cmd)}` exited {proc.returncode}, expected {expect}:\n"
                 f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def size_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink()) / 1e6


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    wheel = Path(sys.argv[1]).resolve()
    torch_spec = shlex.split(os.environ.get("GRADLAB_CPU_TORCH", "torch==2.13.0"))
    with tempfile.TemporaryDirectory(prefix="gradlab-wheel-") as tmp:
        home = Path(tmp)
        venv, work = home / "venv", home / "student"
        work.mkdir()
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        py, bin_ = str(venv / "bin" / "python"), venv / "bin"
        base = size_mb(venv)

        start = time.perf_counter()
        run([py, "-m", "pip", "install", "-q", *torch_spec], work)
        torch_s, torch_mb = time.perf_counter() - start, size_mb(venv) - base
        version = run([py, "-c", "import torch; print(torch.__version__)"], work).stdout.strip()
        print(f"CPU torch {version}: {torch_s:.0f} s, {torch_mb:,.0f} MB in the venv")

        # 2. The notebooks' install cell, exactly as shipped in the wheel, with the wheel beside it (Colab's upload)
        with zipfile.ZipFile(wheel) as z:
            nb = json.loads(z.read("gradlab/_data/notebooks/01-mnist.ipynb"))
            answers = [n for n in z.namelist() if n.endswith("/exercises/answers.py")]
            kit = [n for n in z.namelist() if n.startswith("teacher/") or "_graded/" in n]  # the graded variants
        if answers:  # a class installs this wheel: the model answers stay in the repository
            sys.exit(f"check_wheel: the wheel carries the model answers ({answers[0]}, …)")
        if kit:
            sys.exit(f"check_wheel: the wheel carries the teacher kit ({kit[0]}, …)")
        shutil.copy(wheel, work / wheel.name)
        start = time.perf_counter()
        run([py, "-c", "".join(nb["cells"][1]["source"])], work)
        gradlab_s, total_mb = time.perf_counter() - start, size_mb(venv) - base
        print(f"gradlab by the notebook's first cell: {gradlab_s:.0f} s; venv now {total_mb:,.0f} MB "
              f"(gradlab and its other dependencies: {total_mb - torch_mb:,.0f} MB)")
        after = run([py, "-c", "import torch; print(torch.__version__)"], work).stdout.strip()
        if after != version:
            sys.exit(f"check_wheel: installing gradlab replaced torch {version} by {after}")
        listed = run([py, "-m", "pip", "list", "--format", "json"], work).stdout
        names = [p["name"].lower() for p in json.loads(listed)]
        extra = [n for n in names if n.startswith("nvidia") or n in ("torchvision", "triton")]
        if extra:
            sys.exit(f"check_wheel: gradlab pulled in {', '.join(extra)}")

        # 3. As a student uses it, from a folder that is not the repository
        gradlab = str(bin_ / "gradlab")
        out = run([gradlab, "mnist", "--config", "mnist-quick"], work, env={**os.environ, "COLUMNS": "100"}).stdout
        assert "mnist-sample" in out and "claims hold" in out, out
        out = run([gradlab, "all", "--quick", "--lessons", "log1pexp,jacobian,ddp"], work).stdout
        assert "claims hold in 3 lessons" in out, out
        run([gradlab, "notebooks", "nbs"], work)
        assert len(list((work / "nbs").glob("*.ipynb"))) == 8
        err = run([gradlab, "mnist", "--dataset", "mnist", "--data-dir", str(work / "none")], work, expect=2).stderr
        assert "needs torchvision" in err and "gradlab-teach[full]" in err and len(err.strip().splitlines()) == 1, err
        if version.endswith("+cpu"):  # the advice keeps this CPU torch: torchvision from the CPU index, torch pinned
            assert f'"torch=={version[:-4]}" --index-url https://download.pytorch.org/whl/cpu' in err, err
        print(f"ok: {wheel.name} with torch {version}, from {work}: preset by name, 3 lessons, notebooks, and the "
              f"torchvision message")


if __name__ == "__main__":
    main()
