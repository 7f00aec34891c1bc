"""The gradlab command as a user runs it: options, files, exit codes, and one clear line for every bad input."""

import json
import subprocess
import sys

import pytest
import torch
from conftest import assert_one_line_error, invoke

import gradlab
from gradlab.cli.main import cli
from gradlab.errors import GradlabError, Interrupted, RunFailed
from gradlab.kit import data as datasets
from gradlab.kit import device as devices

FAST = ["--dataset", "mnist-sample", "--epochs", "2", "--train-size", "2000", "--test-size", "500"]
TIMING = ("wall_s", "samples_per_s")


def without_timing(result_json):
    for m in result_json["metrics"].values():
        for key in TIMING:
            m.pop(key)
    result_json["tables"] = [t for t in result_json["tables"] if t["title"] != "after training"]
    return result_json


def test_help_lists_lessons_without_importing_torch():
    code = ("import sys; from gradlab.cli.main import cli\n"
            "try: cli(['--help'])\nexcept SystemExit: pass\n"
            "assert 'torch' not in sys.modules, 'torch imported'\n"
            "assert 'rich' not in sys.modules, 'rich imported'")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "mnist" in out and "Softmax regression on MNIST" in out


def test_version_and_module_entry_point():
    from gradlab import __version__

    assert invoke("--version").output.strip() == f"gradlab {__version__}"
    out = subprocess.run([sys.executable, "-m", "gradlab", "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"gradlab {__version__}"


def test_choices_match_the_modules():
    """--dataset and --device offer exactly what gradlab.kit.data and gradlab.kit.device accept (one list each)."""
    choices = {p.name: tuple(p.type.choices) for p in cli.commands["mnist"].params if p.name in ("dataset", "device")}
    assert choices["dataset"] == datasets.DATASETS and choices["device"] == devices.DEVICES


def test_mnist_compare_writes_json_and_plot(tmp_path):
    out, png = tmp_path / "r.json", tmp_path / "r.png"
    result = invoke("mnist", *FAST, "--json", str(out), "--plot", str(png))
    assert result.exit_code == 0, result.output
    for text in ("loaded mnist-sample: 10,000 training and 10,000 test images", "cost per epoch",
                 "optimizer", "manual", "analytic", "all 4 claims hold", "✓"):
        assert text in result.output
    r = json.loads(out.read_text())
    assert {"lesson", "version", "config", "data", "device", "torch", "seed", "metrics", "claims",
            "curves"} <= set(r)
    assert r["lesson"] == "mnist" and r["device"] == "cpu" and r["seed"] == 0
    assert r["data"]["name"] == "mnist-sample" and (r["data"]["train"], r["data"]["test"]) == (2000, 500)
    assert set(r["metrics"]) == {"optimizer", "manual", "analytic"}
    assert set(r["metrics"]["manual"]) == {"epoch_cost", "test_accuracy", "wall_s", "samples_per_s"}
    assert all(set(c) >= {"id", "text", "value", "bound", "passed"} and c["passed"] for c in r["claims"])
    assert r["config"]["epochs"] == 2 and r["config"]["dataset"] == "mnist-sample"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary files left


@pytest.mark.parametrize(("flag", "variant"), [("--optimizer", "optimizer"), ("--manual-grad", "manual"),
                                               ("--analytic", "analytic"), ("--compare", None)])
def test_variant_flags(tmp_path, flag, variant):
    out = tmp_path / "r.json"
    result = invoke("mnist", *FAST, flag, "--json", str(out))
    assert result.exit_code == 0, result.output
    expected = {variant} if variant else {"optimizer", "manual", "analytic"}
    assert set(json.loads(out.read_text())["metrics"]) == expected


def test_same_seed_same_json_and_no_shuffle(tmp_path):
    runs = []
    for i, extra in enumerate([[], [], ["--seed", "7"], ["--no-shuffle"]]):
        out = tmp_path / f"{i}.json"
        assert invoke("mnist", *FAST, "--json", str(out), *extra).exit_code == 0
        runs.append(without_timing(json.loads(out.read_text())))
    assert runs[0] == runs[1]
    assert runs[0]["metrics"] != runs[2]["metrics"] and runs[0]["metrics"] != runs[3]["metrics"]
    assert runs[3]["config"]["shuffle"] is False


def test_quiet_prints_nothing_and_keeps_the_exit_code(tmp_path):
    result = invoke("mnist", *FAST, "--quiet")
    assert result.exit_code == 0 and result.output == ""


def test_config_file_with_flag_override(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('dataset = "mnist-sample"\nepochs = 3\nlr = 0.05\ntrain-size = 1000\ntest_size = 200\n'
                   'variant = "analytic"\n')
    out = tmp_path / "r.json"
    assert invoke("mnist", "--config", str(cfg), "--epochs", "1", "--json", str(out)).exit_code == 0
    c = json.loads(out.read_text())["config"]
    assert (c["epochs"], c["lr"], c["train_size"], c["test_size"], c["variant"]) == (1, 0.05, 1000, 200, "analytic")


def test_tutorial_preset_is_the_defaults():
    from conftest import tomllib

    from gradlab.lessons.mnist.settings import Config

    with open("configs/mnist-tutorial.toml", "rb") as f:
        preset = tomllib.load(f)
    assert Config(**preset) == Config()
    defaults = cli.commands["mnist"].make_context("mnist", []).params  # what the flags give when none is typed
    assert {k: defaults[k] for k in preset} == preset


def test_auto_dataset_offline_notes_the_fallback(tmp_path):
    result = invoke("mnist", "--offline", "--data-dir", str(tmp_path), "--epochs", "1", "--test-size", "100")
    assert result.exit_code == 0
    assert "using the bundled mnist-sample" in result.output and "data: mnist-sample" in result.output


def test_auto_device_on_a_cpu_machine_needs_no_note(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    result = invoke("mnist", *FAST, "--device", "auto")
    assert "device cpu" in result.output and "note: --device" not in result.output


def test_divergence_exits_1_with_the_step(tmp_path):
    out = tmp_path / "r.json"
    result = invoke("mnist", *FAST, "--lr", "1e38", "--json", str(out))
    assert result.exit_code == 1
    assert "the cost became nan at epoch 1, step 2" in result.output.replace("\n", " ")
    r = json.loads(out.read_text())  # NaN is written as a string, so the file is valid JSON
    assert r["metrics"]["optimizer"]["test_accuracy"] == "nan" and r["stopped"]


@pytest.mark.parametrize(("args", "fragments"), [
    (["--lr", "0"], ["--lr must be a positive finite number, got 0.0"]),
    (["--lr", "-0.1"], ["--lr must be a positive finite number"]),
    (["--lr", "nan"], ["--lr must be a positive finite number, got nan"]),
    (["--lr", "inf"], ["--lr must be a positive finite number, got inf"]),
    (["--lr", "fast"], ["'fast' is not a valid float", "gradlab mnist --help"]),
    (["--batch-size", "0"], ["--batch-size must be at least 1"]),
    (["--batch-size", "5000"], ["--batch-size 5000 is larger than the training set (2000 images)"]),
    (["--epochs", "0"], ["--epochs must be at least 1"]),
    (["--epochs", "2.5"], ["'2.5' is not a valid integer"]),
    (["--train-size", "-1"], ["--train-size must be at least 1"]),
    (["--dataset", "cifar"], ["'cifar' is not one of"]),
    (["--device", "tpu"], ["'tpu' is not one of"]),
    # click's own wording: "No such option: --bogus" before click 8.4, "No such option '--bogus'." since
    (["--bogus"], ["No such option", "--bogus"]),
])
def test_bad_numbers_and_names(args, fragments):
    assert_one_line_error(invoke("mnist", *FAST, *args), *fragments)


def test_unknown_lesson():
    assert_one_line_error(invoke("mnsit"), "No such command 'mnsit'")


def test_cuda_asked_for_but_absent(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert_one_line_error(invoke("mnist", *FAST, "--device", "cuda"), "--device cuda", "--device cpu")


def test_mps_asked_for_but_absent(monkeypatch):
    monkeypatch.setattr(devices, "_mps_available", lambda torch: False)
    assert_one_line_error(invoke("mnist", *FAST, "--device", "mps"), "Apple MPS is not available")


def test_missing_data_offline(tmp_path):
    assert_one_line_error(invoke("mnist", "--dataset", "mnist", "--offline", "--data-dir", str(tmp_path)),
                          "--offline forbids downloading", "--dataset mnist-sample")


def test_corrupted_data_file(tmp_path):
    from conftest import make_idx_set

    raw = tmp_path / "MNIST" / "raw"
    make_idx_set(raw, compress=False)
    (raw / "t10k-images-idx3-ubyte").write_bytes(b"\x00\x00\x08\x03garbage")
    assert_one_line_error(invoke("mnist", "--dataset", "mnist", "--offline", "--data-dir", str(tmp_path)),
                          "corrupted or truncated", "delete them")


@pytest.mark.parametrize(("text", "fragments"), [
    ("epochs = [1, 2", ["is not valid TOML"]),
    ("lrr = 0.1", ["unknown key 'lrr'", "known keys:"]),
    ("epochs = 'many'", ["epochs must be a whole number, got 'many'"]),
    ("epochs = 0", ["--epochs must be at least 1"]),
    ("json_path = 'x.json'", ["unknown key 'json_path'"]),
])
def test_bad_config_file(tmp_path, text, fragments):
    cfg = tmp_path / "c.toml"
    cfg.write_text(text)
    assert_one_line_error(invoke("mnist", "--dataset", "mnist-sample", "--config", str(cfg)), *fragments)


def test_missing_config_file(tmp_path):
    assert_one_line_error(invoke("mnist", "--config", str(tmp_path / "none.toml")), "does not exist")


@pytest.mark.parametrize("option", ["--json", "--plot"])
def test_unwritable_output_path_fails_before_training(tmp_path, option):
    target = tmp_path / "no-such-folder" / "r.out"
    result = invoke("mnist", *FAST, option, str(target))
    assert_one_line_error(result, f"{option} {target}", "does not exist")
    assert "cost per epoch" not in result.output and not target.parent.exists()


def test_bad_input_leaves_no_output_file(tmp_path):
    out = tmp_path / "r.json"
    assert invoke("mnist", *FAST, "--lr", "-1", "--json", str(out)).exit_code == 2
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_device_selection_with_cuda_mocked_present(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i=0: "Mock GPU")
    device, note = devices.resolve_device("auto")
    assert device.type == "cuda" and "Mock GPU" in note
    device, note = devices.resolve_device("cuda")
    assert device.type == "cuda" and note is None


def test_device_selection_with_cuda_mocked_absent(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(devices, "_mps_available", lambda torch: False)
    device, note = devices.resolve_device("auto")
    assert device.type == "cpu" and note is None  # the header's "device cpu" says it
    assert devices.resolve_device("cpu") == (torch.device("cpu"), None)


def test_cpu_only_lessons_say_so_when_cuda_is_asked_for(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i=0: "Mock GPU")
    result = invoke("log1pexp", "--device", "cuda", "--x", "0", "--dtype", "float64")
    assert result.exit_code == 0, result.output
    assert "gradlab log1pexp runs on the CPU" in result.output and "device cpu" in result.output


def test_quick_on_every_lesson_is_the_budget_all_quick_uses_and_explicit_values_win(tmp_path):
    from gradlab.lessons import LESSONS
    from gradlab.runner import budget_values

    for name in LESSONS:
        assert "--quick" in invoke(name, "--help").output
    assert budget_values(LESSONS["mnist"], "quick") == {"dataset": "mnist-sample", "offline": True, "epochs": 3}
    out = invoke("mnist", "--quick", "--epochs", "1", "--train-size", "500", "--json", "-", "--quiet")
    config = json.loads(out.stdout)["config"]
    assert out.exit_code == 0 and config["epochs"] == 1 and config["dataset"] == "mnist-sample" and config["quick"]
    preset = tmp_path / "p.toml"
    preset.write_text("epochs = 2\ntrain_size = 500\n")
    config = json.loads(invoke("mnist", "--quick", "--config", str(preset), "--json", "-", "--quiet").stdout)["config"]
    assert config["epochs"] == 2 and config["dataset"] == "mnist-sample"  # the file overrides the quick budget too
    r = gradlab.run("ddp", quick=True, workers=1)
    assert r.config["steps"] == 10 and r.exit_code == 0
    assert gradlab.run("ddp", quick=True, workers=1, steps=3).config["steps"] == 3


def test_gradlab_device_sets_the_default_device(monkeypatch):
    """GRADLAB_DEVICE gives --device when it is not typed (the suite sets it to cpu: tests/conftest.py)."""
    monkeypatch.setenv("GRADLAB_DEVICE", "cuda")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert_one_line_error(invoke("mnist", *FAST), "--device cuda asked for")
    assert invoke("mnist", *FAST, "--device", "cpu").exit_code == 0  # a flag overrides it
    assert gradlab.options("mnist")["device"] == "cuda"  # gradlab.run reads it too
    monkeypatch.setenv("GRADLAB_DEVICE", "")  # empty: not set, as click reads it
    assert gradlab.options("mnist")["device"] == "auto"
    monkeypatch.setenv("GRADLAB_DEVICE", "gpu")
    assert_one_line_error(invoke("mnist", *FAST), "gpu")
    with pytest.raises(GradlabError, match="environment variable GRADLAB_DEVICE: 'gpu' is not one of 'auto'"):
        gradlab.run("mnist")


def test_a_device_found_missing_while_running_is_worded_for_the_caller(monkeypatch):
    """No CUDA is found after the options were checked (when the lesson starts): the command line hears --device,
    gradlab.run its keyword."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert_one_line_error(invoke("log1pexp", "--device", "cuda"), "--device cuda asked for",
                          "use --device cpu (or --device auto)")
    with pytest.raises(GradlabError) as e:
        gradlab.run("log1pexp", device="cuda")
    assert str(e.value).startswith("gradlab.run('log1pexp'): device='cuda' asked for") and "--" not in str(e.value)
    assert "use device='cpu' (or device='auto')" in str(e.value)


class _Unwritable(GradlabError):
    exit_code = 3  # a code no gradlab error uses: only the exception can have said it


@pytest.mark.parametrize("error, code", [(GradlabError("bad"), 2), (RunFailed("a worker died"), 1),
                                         (_Unwritable("odd"), 3)])
def test_the_exit_code_is_the_errors_own(monkeypatch, error, code):
    """The command line ends every GradlabError one way: its one line, then the exit code it carries (2 for bad
    input, 1 for a run that could not finish), as click's UsageError carries its own."""
    def fail(*args, **kwargs):
        raise error

    monkeypatch.setattr("gradlab.runner.execute", fail)
    result = invoke("log1pexp", "--quiet")
    assert result.exit_code == code and result.stderr == f"gradlab: error: {error}\n", result.output
    assert GradlabError.exit_code == 2 and RunFailed.exit_code == 1 and Interrupted(15).exit_code == 143
