"""Datasets: the bundled sample, full MNIST from local files, Fashion-MNIST from Debian, bad and missing files."""

import gzip
import subprocess
import sys

import numpy as np
import pytest
import torch
from conftest import REPO, copy_sample_gz, invoke, make_idx_set, write_idx

from gradlab.errors import GradlabError
from gradlab.kit import data as datasets
from gradlab.kit.training import prepare
from gradlab.lessons.mnist.settings import Config as MnistConfig


def test_sample_is_real_mnist_in_memory(sample):
    assert (len(sample.y_train), len(sample.y_test)) == (10_000, 10_000)
    assert sample.x_train.shape == (10_000, 784) and sample.x_train.dtype == torch.float32
    assert float(sample.x_train.min()) == 0.0 and float(sample.x_train.max()) == 1.0
    assert sample.y_train.dtype == torch.int64 and set(sample.y_train.unique().tolist()) == set(range(10))
    # The first MNIST training labels are 5, 0, 4, 1, 9; the first test labels 7, 2, 1, 0, 4.
    assert sample.y_train[:5].tolist() == [5, 0, 4, 1, 9]
    assert sample.y_test[:5].tolist() == [7, 2, 1, 0, 4]
    info = sample.info(3000, 1000)
    assert (info["name"], info["train"], info["test"]) == ("mnist-sample", 3000, 1000)


def test_auto_offline_falls_back_to_the_sample(tmp_path):
    data, notes = datasets.load("auto", tmp_path, offline=True)
    assert data.name == "mnist-sample"
    assert len(notes) == 1 and "using the bundled mnist-sample" in notes[0] and "--offline" in notes[0]


def test_auto_falls_back_when_the_download_fails(tmp_path, monkeypatch):
    import torchvision

    def no_network(self):
        raise RuntimeError("Error downloading train-images-idx3-ubyte.gz:\n<urlopen error no network>")

    monkeypatch.setattr(torchvision.datasets.MNIST, "download", no_network)
    data, notes = datasets.load("auto", tmp_path, offline=False)
    assert data.name == "mnist-sample"
    assert "could not be downloaded (no network?)" in notes[0] and "urlopen" not in notes[0]


def test_explicit_mnist_offline_and_missing_is_an_error(tmp_path):
    with pytest.raises(GradlabError, match=r"--offline forbids downloading.*--dataset mnist-sample"):
        datasets.load("mnist", tmp_path, offline=True)


def test_full_mnist_from_local_gz_files_through_torchvision(tmp_path):
    copy_sample_gz(tmp_path / "MNIST" / "raw")
    data, notes = datasets.load("auto", tmp_path, offline=True)
    assert data.name == "mnist" and not notes
    assert "decompressed" in data.source and (tmp_path / "MNIST" / "raw" / "train-images-idx3-ubyte").is_file()
    assert len(data.y_train) == 10_000 and data.y_train[:3].tolist() == [5, 0, 4]


def test_fashion_mnist_from_debian_package_folder(tmp_path, monkeypatch):
    debian = tmp_path / "debian"
    make_idx_set(debian, n_train=120, n_test=30)
    monkeypatch.setattr(datasets, "DEBIAN_FASHION_DIR", debian)
    data, _ = datasets.load("fashion-mnist", tmp_path / "data", offline=True)
    assert (data.name, len(data.y_train), len(data.y_test)) == ("fashion-mnist", 120, 30)
    assert str(debian) in data.source


def test_fashion_mnist_missing_offline(tmp_path, monkeypatch):
    monkeypatch.setattr(datasets, "DEBIAN_FASHION_DIR", tmp_path / "nowhere")
    with pytest.raises(GradlabError, match="fashion-mnist not found"):
        datasets.load("fashion-mnist", tmp_path, offline=True)


def test_truncated_raw_file_is_reported(tmp_path):
    raw = tmp_path / "MNIST" / "raw"
    make_idx_set(raw, compress=False)
    images = raw / "train-images-idx3-ubyte"
    images.write_bytes(images.read_bytes()[:5000])
    with pytest.raises(GradlabError, match="corrupted or truncated"):
        datasets.load("mnist", tmp_path, offline=True)


def test_mismatched_image_and_label_counts(tmp_path):
    raw = tmp_path / "MNIST" / "raw"
    make_idx_set(raw, compress=False)
    write_idx(raw / "train-labels-idx1-ubyte", np.zeros(7))
    with pytest.raises(GradlabError, match="inconsistent"):
        datasets.load("mnist", tmp_path, offline=True)


def test_labels_out_of_range(tmp_path):
    raw = tmp_path / "MNIST" / "raw"
    make_idx_set(raw, compress=False)
    write_idx(raw / "train-labels-idx1-ubyte", np.full(200, 42))
    with pytest.raises(GradlabError, match="inconsistent"):
        datasets.load("mnist", tmp_path, offline=True)


def test_corrupted_gz_file_is_reported_and_leaves_no_half_file(tmp_path):
    raw = tmp_path / "MNIST" / "raw"
    make_idx_set(raw)
    gz = raw / "train-images-idx3-ubyte.gz"
    gz.write_bytes(gz.read_bytes()[:300])
    with pytest.raises(GradlabError, match="cannot decompress"):
        datasets.load("mnist", tmp_path, offline=True)
    assert not (raw / "train-images-idx3-ubyte").exists()
    assert not [p for p in raw.iterdir() if p.name.startswith(".")]


def test_bundled_sample_checksum_is_verified(tmp_path, monkeypatch):
    fake = tmp_path / "bundled"
    copy_sample_gz(fake)
    labels = fake / "t10k-labels-idx1-ubyte.gz"
    raw = bytearray(gzip.decompress(labels.read_bytes()))
    raw[100] = (raw[100] + 1) % 10
    labels.write_bytes(gzip.compress(bytes(raw)))
    monkeypatch.setattr(datasets, "bundled_sample_dir", lambda: fake)
    with pytest.raises(GradlabError, match=r"corrupted \(sha256 differs\)"):
        datasets.load("mnist-sample", tmp_path, offline=True)


def test_sample_read_directly_equals_torchvision_reading_it(tmp_path):
    """read_idx on the bundled .gz bytes gives exactly what torchvision's MNIST reads from the same files."""
    from conftest import copy_sample_gz

    copy_sample_gz(tmp_path / "MNIST" / "raw")
    ours, _ = datasets.load("mnist-sample", tmp_path / "unused", offline=True)
    theirs, _ = datasets.load("mnist", tmp_path, offline=True)
    for a in ("x_train", "y_train", "x_test", "y_test"):
        assert torch.equal(getattr(ours, a), getattr(theirs, a)), a
    assert "torchvision" not in subprocess.run(
        [sys.executable, "-c", "import sys; from gradlab.kit import data; data.load('mnist-sample'); "
                               "print(*[m for m in sys.modules if m.startswith('torchvision')])"],
        capture_output=True, text=True, check=True).stdout


def test_unknown_dataset():
    with pytest.raises(GradlabError, match="unknown dataset 'cifar'"):
        datasets.load("cifar")


def test_default_data_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("GRADLAB_DATA", str(tmp_path))
    assert datasets.default_data_dir() == tmp_path
    monkeypatch.delenv("GRADLAB_DATA")
    assert datasets.default_data_dir().name == "data"


def test_a_read_only_data_dir_is_not_blamed_on_the_archive(tmp_path, monkeypatch):
    from conftest import copy_sample_gz

    copy_sample_gz(tmp_path / "MNIST" / "raw")

    def denied(*a, **k):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(datasets.tempfile, "mkstemp", denied)
    with pytest.raises(GradlabError, match=r"Permission denied.*choose a writable --data-dir") as e:
        datasets.load("mnist", tmp_path, offline=True)
    assert "corrupted" not in str(e.value)


FULL_MNIST = REPO / "data" / "MNIST" / "raw" / "train-images-idx3-ubyte"


@pytest.mark.parametrize(("name", "folder"), [("mnist", "MNIST"), ("fashion-mnist", "FashionMNIST")])
def test_a_full_training_file_trains_from_image_5000_as_the_tutorials_mnist_train(tmp_path, name, folder):
    """read_data_sets(validation_size=5000) made images 0-4,999 mnist.validation: mnist.train starts at image 5,000
    of the file. The first training image of the split is the file's image 5,000, read from the IDX bytes."""
    raw = tmp_path / folder / "raw"
    make_idx_set(raw, n_train=5_100, n_test=40, compress=False)
    data, _ = datasets.load(name, tmp_path, offline=True)
    split = prepare(MnistConfig(batch_size=10, test_size=40), data, torch.device("cpu"))
    pixels = (raw / "train-images-idx3-ubyte").read_bytes()[16:]  # IDX: a 16-byte header, then 784 bytes an image
    labels = (raw / "train-labels-idx1-ubyte").read_bytes()[8:]
    image = torch.tensor(list(pixels[5_000 * 784:5_001 * 784]), dtype=torch.float32) / 255
    assert torch.equal(split.x[0], image) and int(split.y[0].argmax()) == labels[5_000]
    assert len(split.x) == 100 and torch.equal(split.x[-1], data.x_train[5_099])
    assert split.images == "images 5,000–5,099, as the tutorial's mnist.train"
    assert torch.equal(split.x_test, data.x_test[:40])  # the test images are the first ones, as mnist.test[:3000]
    few = prepare(MnistConfig(batch_size=10, train_size=30), data, torch.device("cpu"))
    assert torch.equal(few.x, data.x_train[5_000:5_030]) and "mnist.train starts at 5,000" in few.images


def test_the_bundled_sample_keeps_all_its_10000_images_from_image_0(sample):
    split = prepare(MnistConfig(), sample, torch.device("cpu"))
    assert len(split.x) == 10_000 and torch.equal(split.x, sample.x_train) and split.images == "images 0–9,999"


def test_the_data_line_names_the_training_images_used(tmp_path):
    make_idx_set(tmp_path / "MNIST" / "raw", n_train=5_200, n_test=50, compress=False)
    out = invoke("mnist", "--dataset", "mnist", "--data-dir", str(tmp_path), "--offline", "--epochs", "1",
                 "--batch-size", "20", "--test-size", "50", "--no-shuffle", env={"COLUMNS": "200"})
    assert out.exit_code in (0, 1), out.output  # random images: the claims may or may not hold
    assert "train 200 of 5,200 (images 5,000–5,199, as the tutorial's mnist.train)" in out.output
    sample = invoke("mnist", "--dataset", "mnist-sample", "--offline", "--epochs", "1", "--train-size", "500",
                    env={"COLUMNS": "200"})
    assert "train 500 of 10,000 (images 0–499)" in sample.output


@pytest.mark.skipif(not FULL_MNIST.is_file(), reason="full MNIST is not in data/MNIST/raw")
def test_real_full_mnist_trains_on_images_5000_to_59999():
    data, _ = datasets.load("mnist", REPO / "data", offline=True)
    split = prepare(MnistConfig(), data, torch.device("cpu"))
    pixels = FULL_MNIST.read_bytes()[16:]
    assert len(split.x) == 55_000 and torch.equal(
        split.x[0], torch.tensor(list(pixels[5_000 * 784:5_001 * 784]), dtype=torch.float32) / 255)
    assert split.images == "images 5,000–59,999, as the tutorial's mnist.train"
