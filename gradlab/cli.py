"""The `gradlab` command: a click group with one subcommand per lesson.

Only click is imported at start-up: torch, rich and the lessons are imported when a lesson runs, so
`gradlab --help` stays fast. Each subcommand parses options, builds the lesson's Config, loads data, calls
`run(config, ...)`, and hands the Result to the report layer.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from pathlib import Path
from typing import Any

import click

from gradlab import __version__
from gradlab.errors import GradlabError

DEVICES = ("auto", "cpu", "cuda", "mps")  # kept in step with gradlab.device.DEVICES (tested)
DATASETS = ("auto", "mnist", "mnist-sample", "fashion-mnist")  # kept in step with gradlab.data.DATASETS (tested)
RUN_OPTIONS = {"config", "json_path", "plot_path", "quiet", "device", "dataset", "data_dir", "offline"}


class GradlabGroup(click.Group):
    """Bad input of any kind becomes one line on stderr and exit code 2, never a traceback."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        try:
            code = super().main(args, prog_name or "gradlab", complete_var, standalone_mode=False, **extra)
        except click.ClickException as e:
            hint = f" (see `{e.ctx.command_path} --help`)" if getattr(e, "ctx", None) else ""
            _error(e.format_message().replace("\n", " ") + hint)
            sys.exit(2)
        except GradlabError as e:
            _error(str(e))
            sys.exit(2)
        except click.Abort:
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


def _error(message: str) -> None:
    from gradlab.report.console import error_line

    error_line(message)


def common_options(f):
    """--seed --device --config --json --plot --quiet: on every lesson."""
    options = [
        click.option("--seed", type=int, default=0, show_default=True,
                     help="Random seed; CPU runs repeat bit for bit."),
        click.option("--device", type=click.Choice(DEVICES), default="auto", show_default=True,
                     help="auto: CUDA, then MPS, else CPU (with a note). An explicit absent device is an error."),
        click.option("--config", type=click.Path(dir_okay=False), default=None,
                     help="TOML file of option values (see configs/); flags given here override it."),
        click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
                     help="Write the machine-readable result to this file."),
        click.option("--plot", "plot_path", type=click.Path(dir_okay=False), default=None,
                     help="Write a PNG of the curves to this file."),
        click.option("--quiet", is_flag=True, help="Print nothing; use the exit code (and --json)."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def data_options(f):
    """--dataset --data-dir --offline: on every lesson that trains on images."""
    options = [
        click.option("--dataset", type=click.Choice(DATASETS), default="auto", show_default=True,
                     help="auto: full MNIST when present or downloadable, else the bundled mnist-sample."),
        click.option("--data-dir", type=click.Path(file_okay=False), default=None, envvar="GRADLAB_DATA",
                     help="Where datasets live (default: data/ of the checkout; env GRADLAB_DATA)."),
        click.option("--offline", is_flag=True, help="Never touch the network; use local files only."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


@click.group(cls=GradlabGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(__version__, "--version", prog_name="gradlab", message="%(prog)s %(version)s")
def cli() -> None:
    """gradlab: learn how gradients really work.

    Each lesson reproduces a classic TensorFlow-1 gradient tutorial in PyTorch and proves its teaching point
    with claims checked at run time. Start with `gradlab mnist`; every lesson runs offline on bundled data.
    """


@cli.command(short_help="Softmax regression on MNIST: optimizer step vs manual gradient step vs analytic gradient.")
@click.option("--compare", "variant", flag_value="compare", default=True,
              help="Run all three ways on the same batch order, side by side (default).")
@click.option("--optimizer", "variant", flag_value="optimizer",
              help="Only torch.optim.SGD: zero_grad / backward / step (TF: optimizer.minimize).")
@click.option("--manual-grad", "variant", flag_value="manual",
              help="Only torch.autograd.grad, then W -= lr * g (TF: tf.gradients + assign).")
@click.option("--analytic", "variant", flag_value="analytic",
              help="Only the hand-derived gradient xᵀ(p − y)/B; no autograd at all.")
@click.option("--epochs", type=int, default=10, show_default=True, help="Passes over the training images.")
@click.option("--lr", type=float, default=0.01, show_default=True, help="Learning rate of W ← W − lr·∂cost/∂W.")
@click.option("--batch-size", type=int, default=100, show_default=True, help="Images per gradient step.")
@click.option("--train-size", type=int, default=55000, show_default=True,
              help="First N training images (all of them when fewer exist, as with the bundled sample).")
@click.option("--test-size", type=int, default=3000, show_default=True, help="First N test images for accuracy.")
@click.option("--shuffle/--no-shuffle", default=True, show_default=True,
              help="Reshuffle batches each epoch (seeded), or take them in file order.")
@common_options
@data_options
@click.pass_context
def mnist(ctx: click.Context, **params: Any) -> int:
    """Train softmax regression on MNIST three ways and prove they are the same gradient descent.

    The TF-1 tutorial: `GradientDescentOptimizer(lr).minimize(cost)` equals `tf.gradients` then
    `W.assign(W - lr * grad)`. Defaults are the tutorial's (configs/mnist-tutorial.toml).
    """
    return run_lesson(ctx, "mnist", params, needs_data=True)


@cli.command(short_help="Compute → process → apply gradients: clipping by global norm tames exploding gradients.")
@click.option("--clip", type=click.Choice(["global-norm", "norm", "value", "none"]), default="global-norm",
              show_default=True, help="How to process the gradients between compute and apply.")
@click.option("--clip-norm", type=float, default=1.0, show_default=True, help="Cap on the (global) norm.")
@click.option("--clip-value", type=float, default=0.05, show_default=True, help="Cap on each element (--clip value).")
@click.option("--compare/--no-compare", default=True, show_default=True,
              help="Also train without clipping, same batches and init, side by side.")
@click.option("--model", type=click.Choice(["mlp", "softmax"]), default="mlp", show_default=True,
              help="mlp (784→256→256→10, gradients explode at large lr) or the tutorial's softmax (zero init).")
@click.option("--epochs", type=int, default=3, show_default=True, help="Passes over the training images.")
@click.option("--lr", type=float, default=2.0, show_default=True, help="Learning rate (large on purpose).")
@click.option("--batch-size", type=int, default=100, show_default=True, help="Images per step.")
@click.option("--train-size", type=int, default=55000, show_default=True, help="First N training images.")
@click.option("--test-size", type=int, default=3000, show_default=True, help="First N test images for accuracy.")
@click.option("--shuffle/--no-shuffle", default=True, show_default=True, help="Reshuffle batches each epoch.")
@common_options
@data_options
@click.pass_context
def clip(ctx: click.Context, **params: Any) -> int:
    """Train with compute_gradients → clip_by_global_norm → apply_gradients, and without, side by side.

    Shows that the three explicit steps equal backward(); step(), that our global-norm formula equals
    torch.nn.utils.clip_grad_norm_, and what clipping does to a network whose gradients explode.
    The tutorial's plain setting: --config configs/clip-tutorial.toml.
    """
    return run_lesson(ctx, "clip", params, needs_data=True)


@cli.command(short_help="Jacobians and Hessians: why grad of a non-scalar sums, full Jacobians five ways, nesting.")
@click.option("--matrix", default="0.2,0.5,-0.3,0.1;0.4,-0.2,0.6,-0.5", show_default=True,
              help="The policy matrix X: numbers separated by ',', rows by ';'.")
@click.option("--state", default="1.0,0.5,-1.0,2.0", show_default=True,
              help="The state y: one number per column of X.")
@click.option("--output", type=int, default=0, show_default=True, help="Which output W_i the Hessian is of.")
@click.option("--scaling", is_flag=True, help="Also time every Jacobian method on tanh(Ax) for growing n.")
@click.option("--sizes", default="16,64,256,512", show_default=True, help="The n for --scaling.")
@click.option("--repeats", type=int, default=5, show_default=True, help="Timing repeats (the median is shown).")
@common_options
@click.pass_context
def jacobian(ctx: click.Context, **params: Any) -> int:
    """W = log softmax(X y): the summed gradient TF returned, the full Jacobian, and the Hessian.

    Compares a Python loop over outputs, torch.autograd.functional.jacobian, torch.func.jacrev/jacfwd and
    vmap of a vector-Jacobian product against the closed form (e_i − p) yᵀ; the Hessian by jacfwd(jacrev),
    torch.func.hessian and autograd.functional.hessian against finite differences.
    """
    return run_lesson(ctx, "jacobian", params, needs_data=False)


@cli.command(short_help="Custom gradients: log(1+exp(x)) has a NaN gradient at x=100 in float32; fix it right.")
@click.option("--x", "x", default="-100,-20,0,20,88,89,100,1000", show_default=True,
              help="Points at which to evaluate value and gradient (comma-separated).")
@click.option("--dtype", type=click.Choice(["float32", "float64", "both"]), default="both", show_default=True,
              help="Floating-point type(s) of the table.")
@common_options
@click.pass_context
def log1pexp(ctx: click.Context, **params: Any) -> int:
    """log(1 + eˣ) five ways: naive, a torch.where guard, the tutorial's custom gradient, a stable
    torch.autograd.Function, and F.softplus, beside the exact answer; gradcheck and gradgradcheck.
    """
    return run_lesson(ctx, "log1pexp", params, needs_data=False)


@cli.command("gaussian-policy",
             short_help="A custom-gradient layer for a Gaussian policy's score, trained with REINFORCE.")
@click.option("--mu", default="0.3,-0.5", show_default=True, help="Policy mean μ, one number per action dimension.")
@click.option("--sigma", default="0.7,1.2", show_default=True, help="Policy std σ > 0, one per dimension.")
@click.option("--action", default="", help="The action a (default: sampled from N(μ, σ²) with --seed).")
@click.option("--optimum", default="1.5,-0.8", show_default=True, help="The bandit's best action a*.")
@click.option("--epochs", type=int, default=300, show_default=True, help="REINFORCE updates.")
@click.option("--samples", type=int, default=64, show_default=True, help="Actions sampled per update.")
@click.option("--lr", type=float, default=0.05, show_default=True, help="Adam's learning rate.")
@click.option("--tolerance", type=float, default=0.1, show_default=True,
              help="The claim: learned μ within this distance of a*.")
@common_options
@click.pass_context
def gaussian_policy(ctx: click.Context, **params: Any) -> int:
    """∂ln π/∂μ = (a−μ)/σ², ∂ln π/∂σ = ((a−μ)²−σ²)/σ³ as a custom backward, checked against
    torch.distributions.Normal and gradcheck, then REINFORCE on a one-step bandit with a known optimum.
    """
    return run_lesson(ctx, "gaussian_policy", params, needs_data=False)


@cli.command(short_help="stop_gradient on the DQN target (CartPole): detach ≡ placeholder; without it, gradients leak.")
@click.option("--stop-grad", "target", flag_value="stop-grad", default=True,
              help="Cut the target with .detach() (TF: tf.stop_gradient). The default.")
@click.option("--placeholder", "target", flag_value="placeholder",
              help="Compute the target in a torch.no_grad() pass and use it as a constant (TF: feed_dict).")
@click.option("--no-stop-grad", "target", flag_value="no-stop-grad",
              help="Leave the target in the graph: gradients flow into whatever computed it.")
@click.option("--no-target-net", "target_net", flag_value=False, default=True,
              help="Compute the target with the online network itself (combines with the flags above).")
@click.option("--compare", is_flag=True, help="Train the main variants with the same seed, side by side.")
@click.option("--total-steps", type=int, default=30_000, show_default=True, help="Environment steps per variant.")
@click.option("--gamma", type=float, default=0.99, show_default=True, help="Discount factor γ in [0, 1].")
@click.option("--lr", type=float, default=2.3e-3, show_default=True, help="Adam's learning rate.")
@click.option("--anneal-lr/--no-anneal-lr", default=True, show_default=True,
              help="Decay the learning rate linearly to 0 over the run.")
@click.option("--target-update", type=int, default=10, show_default=True,
              help="Sync the target network every N environment steps.")
@click.option("--buffer-size", type=int, default=100_000, show_default=True, help="Replay buffer capacity.")
@click.option("--batch-size", type=int, default=64, show_default=True, help="Transitions per gradient step.")
@click.option("--learning-starts", type=int, default=1000, show_default=True, help="Random steps before learning.")
@click.option("--train-every", type=int, default=256, show_default=True,
              help="Environment steps between training rounds.")
@click.option("--gradient-steps", type=int, default=128, show_default=True, help="Gradient steps per round.")
@click.option("--eval-episodes", type=int, default=10, show_default=True, help="Greedy evaluation episodes.")
@common_options
@click.pass_context
def dqn(ctx: click.Context, **params: Any) -> int:
    """A small DQN on CartPole-v1: gradient anatomy of the target on one fixed batch, then training.

    Claims: placeholder ≡ stop-grad (bitwise, in the anatomy and over a whole training run); without
    stop-grad the gradient reaches the target network, and with no target network the update changes.
    """
    return run_lesson(ctx, "dqn", params, needs_data=False)


@cli.command("actor-critic", short_help="A critic trained from explicit gradients with RMSProp; get/set parameters.")
@click.option("--grad-mode", type=click.Choice(["explicit", "backward"]), default="explicit", show_default=True,
              help="explicit: autograd.grad → .grad → RMSprop.step() (the tutorial); backward: loss.backward().")
@click.option("--total-steps", type=int, default=150_000, show_default=True,
              help="Environment steps, summed over the environments.")
@click.option("--envs", type=int, default=8, show_default=True, help="CartPole environments stepped in lockstep.")
@click.option("--gamma", type=float, default=0.99, show_default=True, help="Discount factor γ in [0, 1].")
@click.option("--critic-lr", type=float, default=2e-3, show_default=True, help="RMSprop learning rate, critic.")
@click.option("--actor-lr", type=float, default=2e-3, show_default=True, help="RMSprop learning rate, actor.")
@click.option("--entropy", type=float, default=0.01, show_default=True, help="Entropy bonus weight β.")
@click.option("--anneal-lr/--no-anneal-lr", default=True, show_default=True,
              help="Decay both learning rates linearly to 0 over the run.")
@click.option("--eval-episodes", type=int, default=10, show_default=True, help="Greedy evaluation episodes.")
@common_options
@click.pass_context
def actor_critic(ctx: click.Context, **params: Any) -> int:
    """One-step actor-critic on CartPole-v1; the critic's gradients are computed with autograd.grad, written
    into .grad and applied by RMSprop, as the tutorial's tf.gradients + apply_gradients. Claims: explicit ≡
    backward (bitwise), and a critic copied through a flat parameter vector or a state_dict gives identical outputs.
    """
    return run_lesson(ctx, "actor_critic", params, needs_data=False)


def run_lesson(ctx: click.Context, name: str, params: dict[str, Any], needs_data: bool) -> int:
    """Parse → Config → data → run → render/write. Returns the exit code (0 claims hold, 1 a claim failed)."""
    from gradlab.config import merge_config
    from gradlab.report.files import check_writable

    params = merge_config(ctx, params)
    check_writable(params.get("json_path"), "--json")
    check_writable(params.get("plot_path"), "--plot")

    # torch's own modules warn that torch.jit.script is deprecated when torch.func loads: not the user's concern
    warnings.filterwarnings("ignore", message=r".*torch\.jit\.script.* is deprecated", category=FutureWarning)
    lesson = importlib.import_module(f"gradlab.lessons.{name}")
    config = lesson.Config(**{k: v for k, v in params.items() if k not in RUN_OPTIONS})
    if params["plot_path"] and hasattr(lesson, "plot_unavailable") and lesson.plot_unavailable(config):
        raise GradlabError(f"--plot: {lesson.plot_unavailable(config)}")

    import torch

    from gradlab.device import resolve_device
    from gradlab.report import console as report
    from gradlab.report.files import write_json, write_plot

    console = report.make_console(quiet=params["quiet"])
    device, device_note = resolve_device(params["device"])
    if device_note:
        console.print(f"[yellow]note:[/] {device_note}")
    kwargs: dict[str, Any] = {"device": device}
    if needs_data:
        from gradlab import data as datasets

        data, notes = datasets.load(params["dataset"], params["data_dir"], params["offline"])
        for note in notes:
            console.print(f"[yellow]note:[/] {note}")
        console.print(f"loaded [bold]{data.name}[/]: {len(data.y_train):,} training and {len(data.y_test):,} test "
                      f"images [dim]({data.source})[/]")
        kwargs["data"] = data

    with report.progress_bar(console) as progress:
        result = lesson.run(config, progress=progress, **kwargs)

    result.config = {k: (str(v) if isinstance(v, Path) else v) for k, v in params.items()
                     if k not in ("json_path", "plot_path", "quiet")}
    result.device, result.torch, result.threads = str(device), torch.__version__, torch.get_num_threads()
    result.version = __version__
    report.render(result, console)
    if params["json_path"]:
        write_json(params["json_path"], result)
        console.print(f"wrote {params['json_path']}")
    if params["plot_path"]:
        write_plot(params["plot_path"], result)
        console.print(f"wrote {params['plot_path']}")
    return result.exit_code


def main() -> None:
    cli()
