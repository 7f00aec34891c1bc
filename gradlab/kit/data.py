"""Datasets by name, loaded once into memory as tensors: x float32 (pixels/255, flattened to 784), y int64.

    mnist          torchvision's MNIST (60,000 + 10,000), from DATA_DIR/MNIST/raw, downloaded there when absent
    mnist-sample   bundled with gradlab (data/mnist-sample): the first 10,000 MNIST training images and
                   the official 10,000 test images; always available offline
    fashion-mnist  torchvision's FashionMNIST, from DATA_DIR/FashionMNIST/raw, or from Debian's
                   `dataset-fashion-mnist` package (/usr/share/datasets/fashion-mnist), else downloaded
    auto           full MNIST when present or downloadable, else the bundled sample (with a note)

torchvision's dataset classes read the four *uncompressed* IDX files in ROOT/<Class>/raw/ and otherwise try
to download. When we have the files compressed (Debian's package, a user's .gz copies), we decompress them into
that folder, which is the layout torchvision documents, and let torchvision read them. The bundled sample is
read from its checksummed .gz files directly (read_idx), so the lessons that use it never import torchvision.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import socket
import struct
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gradlab import assets
from gradlab.errors import GradlabError
from gradlab.kit.options import DATASETS  # the names --dataset offers, declared with the option

FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
DEBIAN_FASHION_DIR = Path("/usr/share/datasets/fashion-mnist")
DOWNLOAD_TIMEOUT_S = 20

# sha256 of the bundled files, as recorded in data/mnist-sample/README.md: corruption is caught before parsing.
SAMPLE_SHA256 = {
    "train-images-idx3-ubyte.gz": "3ef602e995727b0a9aa7f5ddd860650f6d281e99ba21a746d1bfa6fea4a7f4d8",
    "train-labels-idx1-ubyte.gz": "dccde8b3c99723584f8090cef581b2e49d6be36b682abadf5a414714b48cf7ea",
    "t10k-images-idx3-ubyte.gz": "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",
    "t10k-labels-idx1-ubyte.gz": "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",
}

_REPO_DATA = assets.CHECKOUT / "data"


def default_data_dir() -> Path:
    """$GRADLAB_DATA, else the checkout's data/ folder, else ~/.cache/gradlab."""
    if os.environ.get("GRADLAB_DATA"):
        return Path(os.environ["GRADLAB_DATA"])
    if _REPO_DATA.is_dir():
        return _REPO_DATA
    return Path.home() / ".cache" / "gradlab"


def bundled_sample_dir() -> Path:
    """Where the bundled sample lives: data/mnist-sample in a checkout, gradlab/_data in a wheel."""
    d = assets.folder("mnist-sample")
    if d is not None:
        return d
    raise GradlabError("the bundled MNIST sample is missing (data/mnist-sample); reinstall gradlab from its repository")


@dataclass(kw_only=True)
class Data:
    """A dataset in memory. x: (N, 784) float32 in [0, 1]; y: (N,) int64 in 0..9."""

    name: str
    source: str
    x_train: Any
    y_train: Any
    x_test: Any
    y_test: Any

    def info(self, train: int | None = None, test: int | None = None, images: str = "") -> dict[str, Any]:
        """Name and sizes for the report (train/test: how many the lesson used, default all; IMAGES: which training
        images, e.g. "images 5,000–59,999, as the tutorial's mnist.train", printed on the data line)."""
        return {
            "name": self.name,
            "source": self.source,
            "train": len(self.y_train) if train is None else train,
            "test": len(self.y_test) if test is None else test,
            "available": {"train": len(self.y_train), "test": len(self.y_test)},
            **({"train_images": images} if images else {}),
        }


def load(name: str, data_dir: str | Path | None = None, offline: bool = False) -> tuple[Data, list[str]]:
    """Load dataset NAME; return (data, notes). Raise GradlabError with the fix when it cannot be had."""
    if name not in DATASETS:
        raise GradlabError(f"unknown dataset {name!r}: use one of {', '.join(DATASETS)}")
    root = Path(data_dir) if data_dir else default_data_dir()
    notes: list[str] = []
    if name == "mnist-sample":
        return load_sample(root), notes
    if name == "fashion-mnist":
        return _load_full("FashionMNIST", "fashion-mnist", root, offline, extra_gz_dir=DEBIAN_FASHION_DIR), notes
    if name == "mnist":
        return _load_full("MNIST", "mnist", root, offline), notes
    # auto: full MNIST when present or downloadable, else the bundled sample.
    try:
        return _load_full("MNIST", "mnist", root, offline), notes
    except _NotAvailable as e:
        notes.append(f"--dataset auto: full MNIST is not in {root / 'MNIST' / 'raw'} and {e.reason}; "
                     f"using the bundled mnist-sample")
        return load_sample(root), notes


class _NotAvailable(GradlabError):
    """The files are absent and could not be downloaded (as opposed to present but corrupted)."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason  # short, for the --dataset auto note


FULL = "pip install 'gradlab-teach[full]'"  # the extra with torchvision: right unless torch is a CPU-only build


def torchvision_command() -> str:
    """The pip command that adds torchvision and keeps the installed torch (pinned to its version). For a CPU-only
    build (`+cpu`) it reads PyTorch's CPU index, the one that build came from: `pip install 'gradlab-teach[full]'`
    would take PyPI's newest torchvision, which may need a newer torch, and pip would then replace the CPU build with
    PyPI's CUDA one (measured: torch 2.13.0+cpu replaced by 2.15.0 and 15 nvidia-* packages). PyPI's torchvision
    beside a +cpu torch does not even import (measured with 0.28.0 and 2.13.0+cpu: "operator torchvision::nms does not
    exist")."""
    import torch

    version, _, local = torch.__version__.partition("+")
    index = " --index-url https://download.pytorch.org/whl/cpu" if local == "cpu" else ""
    return f'pip install torchvision "torch=={version}"{index}'


def _torchvision_class(class_name: str):
    """torchvision's dataset class, which reads (and downloads) the full datasets. torchvision is an optional
    dependency (the extra `gradlab-teach[full]`, or torchvision_command()): every lesson runs on the bundled sample
    without it."""
    try:
        import torchvision.datasets
    except (ImportError, RuntimeError, OSError):  # absent; or built for another torch (its operators fail to load)
        import torch

        command, cpu = torchvision_command(), torch.__version__.endswith("+cpu")
        how = (f"{command} (not 'gradlab-teach[full]', which would replace this CPU-only torch with PyPI's CUDA "
               f"build)" if cpu else f"{FULL}, or {command} to keep this torch")
        raise _NotAvailable(
            f"the full {class_name} dataset needs torchvision, which is not installed (or does not load beside torch "
            f"{torch.__version__}); {how}, or use --dataset mnist-sample",
            f"torchvision is not installed ({command if cpu else FULL})") from None
    return getattr(torchvision.datasets, class_name)


def _show(path: Path) -> str:
    """A path as the user would type it: relative to the current folder when inside it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _load_full(class_name: str, name: str, root: Path, offline: bool, extra_gz_dir: Path | None = None) -> Data:
    raw = root / class_name / "raw"
    gz_dirs = [raw] + ([extra_gz_dir] if extra_gz_dir else [])
    source = _show(raw)
    if not _have_raw(raw):
        found = next((d for d in gz_dirs if all((d / f"{f}.gz").is_file() for f in FILES)), None)
        if found is not None:
            _decompress_all(found, raw)
            source = f"{_show(raw)} (decompressed from {_show(found)})"
        elif offline:
            raise _NotAvailable(
                f"{name} not found in {raw} and --offline forbids downloading; put the four IDX files there, "
                f"drop --offline, or use --dataset mnist-sample",
                "--offline forbids downloading",
            )
        else:
            _download(class_name, name, root)
            source = f"{_show(raw)} (downloaded by torchvision)"
    return _read_torchvision(class_name, name, root, source)


def _have_raw(raw: Path) -> bool:
    return all((raw / f).is_file() for f in FILES)


def _download(class_name: str, name: str, root: Path) -> None:
    cls = _torchvision_class(class_name)
    old = socket.getdefaulttimeout()
    socket.setdefaulttimeout(DOWNLOAD_TIMEOUT_S)  # a classroom network that hangs should not hang gradlab
    try:
        cls(str(root), train=True, download=True)
    except Exception as e:  # torchvision raises RuntimeError/URLError/OSError; all mean "not downloadable"
        first = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
        raise _NotAvailable(
            f"{name} could not be downloaded into {root / class_name / 'raw'} ({first}); "
            f"put the four IDX files there, or use --dataset mnist-sample",
            "could not be downloaded (no network?)",  # a note for a class: short, no exception text
        ) from None
    finally:
        socket.setdefaulttimeout(old)


def _decompress_all(src_dir: Path, raw: Path) -> None:
    """Decompress SRC/*.gz into RAW atomically (a temporary file renamed), so no half file is ever left."""
    try:
        raw.mkdir(parents=True, exist_ok=True)
        for f in FILES:
            if (raw / f).is_file():
                continue
            fd, tmp = tempfile.mkstemp(dir=raw, prefix=f".{f}.")
            try:
                with gzip.open(src_dir / f"{f}.gz", "rb") as zin, os.fdopen(fd, "wb") as out:
                    shutil.copyfileobj(zin, out, length=1 << 20)
                os.replace(tmp, raw / f)
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
    except (EOFError, gzip.BadGzipFile, zlib.error) as e:  # the archive itself is broken
        raise GradlabError(f"cannot decompress {src_dir}/*.gz: {e}; replace the corrupted .gz file") from None
    except OSError as e:  # the folder: read-only, full, missing
        raise GradlabError(f"cannot write the decompressed files into {raw} ({e.strerror or e}); choose a writable "
                           f"--data-dir") from None


def _read_torchvision(class_name: str, name: str, root: Path, source: str) -> Data:
    import torch

    cls = _torchvision_class(class_name)
    try:
        train, test = cls(str(root), train=True), cls(str(root), train=False)
        arrays = [train.data, train.targets, test.data, test.targets]
    except (AssertionError, RuntimeError, ValueError, IndexError, OSError) as e:
        raise GradlabError(
            f"the {name} files in {root / class_name / 'raw'} are corrupted or truncated "
            f"({type(e).__name__}{': ' + str(e) if str(e) else ''}); delete them and copy or download them again"
        ) from None
    for images, labels, split in ((arrays[0], arrays[1], "train"), (arrays[2], arrays[3], "t10k")):
        ok = images.dim() == 3 and tuple(images.shape[1:]) == (28, 28) and len(images) == len(labels) > 0
        if not ok or int(labels.min()) < 0 or int(labels.max()) > 9:
            raise GradlabError(
                f"the {name} {split} files in {root / class_name / 'raw'} are inconsistent (images "
                f"{tuple(images.shape)}, {len(labels)} labels); delete them and copy or download them again"
            )

    return Data(name=name, source=source, x_train=_flat(arrays[0], torch), y_train=arrays[1].long(),
                x_test=_flat(arrays[2], torch), y_test=arrays[3].long())


def load_sample(root: Path) -> Data:
    """The bundled sample, straight from its .gz files once their checksums are verified: no cache, and no
    torchvision import (1.5 s of every start-up), since verified bytes need no defensive parsing. ROOT is unused."""
    import torch

    src = bundled_sample_dir()
    arrays = []
    for fname, expected in SAMPLE_SHA256.items():
        path = src / fname
        if not path.is_file():
            raise GradlabError(f"bundled data file {path} is missing; restore it with `git checkout -- data/`")
        packed = path.read_bytes()
        if hashlib.sha256(packed).hexdigest() != expected:
            raise GradlabError(f"bundled data file {path} is corrupted (sha256 differs); restore it with "
                               f"`git checkout -- data/`")
        arrays.append(read_idx(gzip.decompress(packed), torch))
    return Data(name="mnist-sample", source=f"{_show(src)}, bundled", x_train=_flat(arrays[0], torch),
                y_train=arrays[1].long(), x_test=_flat(arrays[2], torch), y_test=arrays[3].long())


def read_idx(raw: bytes, torch):
    """An IDX file of unsigned bytes (MNIST's format): 0, 0, 0x08, the number of dimensions d; d big-endian
    32-bit sizes; then the bytes, row-major."""
    d = raw[3]
    dims = struct.unpack(f">{d}I", raw[4:4 + 4 * d])
    return torch.frombuffer(bytearray(raw[4 + 4 * d:]), dtype=torch.uint8).reshape(dims)


def _flat(images, torch):
    """uint8 (N, 28, 28) -> float32 (N, 784) in [0, 1]: the tutorial's pixels / 255."""
    return images.reshape(len(images), 784).to(torch.float32).div_(255.0)
