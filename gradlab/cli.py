"""The `gradlab` command: a click group with one subcommand per lesson.

Only click is imported at start-up: torch, rich and the lessons are imported when a lesson runs, so
`gradlab --help` stays fast. Each subcommand parses options, builds the lesson's Config, loads data, calls
`run(config, ...)`, and hands the Result to the report layer.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from gradlab import __version__
from gradlab.errors import GradlabError, RunFailed, shorten

DEVICES = ("auto", "cpu", "cuda", "mps")  # kept in step with gradlab.device.DEVICES (tested)
DATASETS = ("auto", "mnist", "mnist-sample", "fashion-mnist")  # kept in step with gradlab.data.DATASETS (tested)


def _printable_help(text: str) -> str:
    """Help text the console can show: click writes UTF-8 to a console it thinks misconfigured (ASCII), so the
    symbols are spelled in ASCII here, before click sees them."""
    from gradlab.ascii import printable

    return printable(text, getattr(sys.stdout, "encoding", None) or "utf-8")


class LessonCommand(click.Command):
    """Flags that set the same option to different values (--optimizer / --manual-grad, --stop-grad /
    --placeholder) exclude each other: giving two of them is an error, not "the last one wins"."""

    def get_help(self, ctx: click.Context) -> str:
        return _printable_help(super().get_help(ctx))

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        given = [a.split("=", 1)[0] for a in (args[:args.index("--")] if "--" in args else args)]
        groups: dict[str, list[str]] = {}
        for p in self.params:
            if isinstance(p, click.Option) and p.is_flag and not p.is_bool_flag:
                groups.setdefault(p.name, []).extend(o for o in p.opts if o in given)
        for flags in groups.values():
            if len(set(flags)) > 1:
                raise click.UsageError(f"{' and '.join(dict.fromkeys(flags))} exclude each other; give one", ctx)
        return super().parse_args(ctx, args)


class Interrupted(Exception):
    """Ctrl-C (or SIGTERM, SIGHUP), carried past click (which would print a blank line and call it an abort)."""

    def __init__(self, signum: int = 2) -> None:
        super().__init__(signum)
        self.signum = signum


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where the program is, as Ctrl-C's KeyboardInterrupt is: every cleanup that Ctrl-C
    runs (ddp's workers stopped and reaped, no half-written file) runs for them too."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _terminate(signum: int, frame) -> None:
    raise Terminated(signum)


SIGNAL_WORDS = {2: "interrupted", 15: "terminated (SIGTERM)", 1: "terminated (SIGHUP: the terminal closed)"}


class GradlabGroup(click.Group):
    """Bad input of any kind becomes one line on stderr and exit code 2, never a traceback."""

    command_class = LessonCommand

    def get_help(self, ctx: click.Context) -> str:
        return _printable_help(super().get_help(ctx))

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as e:
            raise Interrupted(getattr(e, "signum", 2)) from None

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)  # teaching order, as defined below, not alphabetical

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        import signal

        for signum in (signal.SIGTERM, signal.SIGHUP):  # like Ctrl-C: one line, exit 128 + the signal's number
            signal.signal(signum, _terminate)
        _hostile_environment()
        try:
            code = super().main(args, prog_name or "gradlab", complete_var, standalone_mode=False, **extra)
        except click.ClickException as e:
            hint = f" (see `{e.ctx.command_path} --help`)" if getattr(e, "ctx", None) else ""
            _error(e.format_message().replace("\n", " ") + hint)
            sys.exit(2)
        except GradlabError as e:
            _error(str(e))
            sys.exit(2)
        except RunFailed as e:  # e.g. a ddp worker died: not the user's input, but no claim can be checked
            _error(str(e))
            sys.exit(1)
        except (Interrupted, click.Abort) as e:  # Ctrl-C, SIGTERM, SIGHUP
            signum = getattr(e, "signum", 2)
            _error(SIGNAL_WORDS.get(signum, "interrupted"))
            sys.exit(128 + signum)
        except BrokenPipeError:  # `gradlab … | head`: the reader left; not a failed claim, and nothing to say
            _quiet_stdout()
            sys.exit(141)  # 128 + SIGPIPE, as a shell reports a program killed by a broken pipe
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            _quiet_stdout()
            sys.exit(141)
        sys.exit(code if isinstance(code, int) else 0)


THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def _hostile_environment() -> None:
    """What the environment can do to a run before it starts, made harmless or one line (exit 2):
    * a console whose encoding cannot show every character (a legacy Windows code page, PYTHONIOENCODING=ascii):
      what it cannot show is replaced, never a UnicodeEncodeError (rich output is spelled in ASCII, see
      report/console.py; this covers click's help and messages);
    * a current folder that was deleted: one line;
    * OMP_NUM_THREADS and friends that are not a positive whole number: dropped before torch loads (OpenMP would
      print a warning of its own), since gradlab sets torch's thread count itself (--threads)."""
    import os

    from gradlab.ascii import is_unicode

    for stream in (sys.stdout, sys.stderr):
        if not is_unicode(getattr(stream, "encoding", None) or "utf-8") and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="replace")
    try:
        os.getcwd()
    except OSError:
        _error("the current folder no longer exists (it was deleted or moved); cd to a folder that exists and run "
               "gradlab again")
        sys.exit(2)
    for name in THREAD_VARIABLES:
        value = os.environ.get(name)
        if value is not None and not (value.strip().isdigit() and int(value) >= 1):
            del os.environ[name]


def _quiet_stdout() -> None:
    """After a broken pipe, point standard output at /dev/null so that Python's exit flush cannot fail again."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def _error(message: str) -> None:
    from gradlab.report.console import error_line

    error_line(message)


def stack(*options):
    """Several click options as one decorator, in the order given."""
    def decorate(f):
        for option in reversed(options):
            f = option(f)
        return f

    return decorate


common_options = stack(  # on every lesson
    click.option("--seed", type=click.IntRange(0, 2**32 - 1), default=0, show_default=True,
                 help="Random seed; CPU runs repeat bit for bit."),
    click.option("--device", type=click.Choice(DEVICES), default="auto", show_default=True,
                 help="auto: CUDA, then MPS, else the CPU. An explicit absent device is an error."),
    click.option("--threads", type=int, default=None,
                 help="CPU threads for torch (default: 1; more only help large tensors on an idle machine)."),
    click.option("--config", type=click.Path(dir_okay=False), default=None,
                 help="TOML file of option values, or a preset's name (e.g. mnist-quick; `gradlab list` names them); "
                      "flags given here override it."),
    click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
                 help="Write the machine-readable result to this file (- for standard output)."),
    click.option("--plot", "plot_path", type=click.Path(dir_okay=False), default=None,
                 help="Write a PNG of the curves to this file (- for standard output)."),
    click.option("--quick", is_flag=True,
                 help="The small budget `gradlab all --quick` uses (see `gradlab list`); every claim is still checked. "
                      "Options given here or in --config override it."),
    click.option("--quiet", is_flag=True, help="Print nothing; use the exit code (and --json)."),
    click.option("--explain", is_flag=True,
                 help="First print the math and the source lines that implement it (read from the code)."),
)


def dataset_options(default: str):
    """--dataset --data-dir --offline: on every lesson that trains on images."""
    return stack(
        click.option("--dataset", type=click.Choice(DATASETS), default=default, show_default=True,
                     help="auto: full MNIST when present or downloadable, else the bundled mnist-sample."),
        click.option("--data-dir", type=click.Path(file_okay=False), default=None, envvar="GRADLAB_DATA",
                     help="Where datasets live (default: data/ of the checkout; env GRADLAB_DATA)."),
        click.option("--offline", is_flag=True, help="Never touch the network; use local files only."),
    )


data_options = dataset_options("auto")


def training_options(epochs: int, lr: float, lr_help: str):
    """--epochs --lr --batch-size --train-size --test-size --shuffle: the lessons that train on MNIST-like images."""
    return stack(
        click.option("--epochs", type=int, default=epochs, show_default=True, help="Passes over the training images."),
        click.option("--lr", type=float, default=lr, show_default=True, help=lr_help),
        click.option("--batch-size", type=int, default=100, show_default=True, help="Images per gradient step."),
        click.option("--train-size", type=int, default=55000, show_default=True,
                     help="First N training images (all of them when fewer exist, as with the bundled sample)."),
        click.option("--test-size", type=int, default=3000, show_default=True,
                     help="First N test images for accuracy."),
        click.option("--shuffle/--no-shuffle", default=True, show_default=True,
                     help="Reshuffle batches each epoch (seeded), or take them in file order."),
    )


def checkpoint_options(every: int):
    """--eval-every --checkpoint-episodes --eval-episodes: the RL lessons report their best checkpoint."""
    return stack(
        click.option("--eval-every", type=int, default=every, show_default=True,
                     help="Every N environment steps, score the policy on greedy episodes; keep the best."),
        click.option("--checkpoint-episodes", type=int, default=5, show_default=True,
                     help="Greedy episodes that score a checkpoint."),
        click.option("--eval-episodes", type=int, default=10, show_default=True,
                     help="Fresh greedy episodes on which the best checkpoint is reported (the claim)."),
    )


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
@training_options(epochs=10, lr=0.01, lr_help="Learning rate of W ← W − lr·∂cost/∂W.")
@common_options
@data_options
@click.pass_context
def mnist(ctx: click.Context, **params: Any) -> int:
    """Train softmax regression on MNIST three ways and prove they are the same gradient descent.

    The TF-1 tutorial: `GradientDescentOptimizer(lr).minimize(cost)` equals `tf.gradients` then
    `W.assign(W - lr * grad)`. Defaults are the tutorial's (configs/mnist-tutorial.toml).
    """
    return run_lesson(ctx, "mnist", params)


@cli.command(short_help="Compute → process → apply gradients: clipping by global norm tames exploding gradients.")
@click.option("--clip", type=click.Choice(["global-norm", "norm", "value", "none"]), default="global-norm",
              show_default=True, help="How to process the gradients between compute and apply.")
@click.option("--clip-norm", type=float, default=1.0, show_default=True, help="Cap on the (global) norm.")
@click.option("--clip-value", type=float, default=0.05, show_default=True, help="Cap on each element (--clip value).")
@click.option("--compare/--no-compare", default=True, show_default=True,
              help="Also train without clipping, same batches and init, side by side.")
@click.option("--model", type=click.Choice(["mlp", "softmax"]), default="mlp", show_default=True,
              help="mlp (784→256→256→10, gradients explode at large lr) or the tutorial's softmax (zero init).")
@training_options(epochs=3, lr=2.0, lr_help="Learning rate (large on purpose: the unclipped mlp blows up).")
@common_options
@data_options
@click.pass_context
def clip(ctx: click.Context, **params: Any) -> int:
    """Train with compute_gradients → clip_by_global_norm → apply_gradients, and without, side by side.

    Shows that the three explicit steps equal backward(); step(), that our global-norm formula equals
    torch.nn.utils.clip_grad_norm_, and what clipping does to a network whose gradients explode.
    The tutorial's plain setting: --config configs/clip-tutorial.toml.
    """
    return run_lesson(ctx, "clip", params)


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
    return run_lesson(ctx, "jacobian", params)


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
    return run_lesson(ctx, "log1pexp", params)


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
    return run_lesson(ctx, "gaussian-policy", params)


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
@click.option("--train-every", type=int, default=128, show_default=True,
              help="Environment steps between training rounds.")
@click.option("--gradient-steps", type=int, default=64, show_default=True, help="Gradient steps per round.")
@checkpoint_options(every=1_000)
@common_options
@click.pass_context
def dqn(ctx: click.Context, **params: Any) -> int:
    """A small DQN on CartPole-v1: gradient anatomy of the target on one fixed batch, then training.

    Claims: placeholder ≡ stop-grad (bitwise, in the anatomy and over a whole training run); without
    stop-grad the gradient reaches the target network, and with no target network the update changes.
    """
    return run_lesson(ctx, "dqn", params)


@cli.command("actor-critic", short_help="A critic trained from explicit gradients with RMSProp; get/set parameters.")
@click.option("--grad-mode", type=click.Choice(["explicit", "backward"]), default="explicit", show_default=True,
              help="explicit: autograd.grad → .grad → RMSprop.step() (the tutorial); backward: loss.backward().")
@click.option("--total-steps", type=int, default=150_000, show_default=True,
              help="Environment steps, summed over the environments.")
@click.option("--envs", type=int, default=16, show_default=True, help="CartPole environments stepped in lockstep.")
@click.option("--gamma", type=float, default=0.99, show_default=True, help="Discount factor γ in [0, 1].")
@click.option("--critic-lr", type=float, default=2e-3, show_default=True, help="RMSprop learning rate, critic.")
@click.option("--actor-lr", type=float, default=2e-3, show_default=True, help="RMSprop learning rate, actor.")
@click.option("--entropy", type=float, default=0.01, show_default=True, help="Entropy bonus weight β.")
@click.option("--anneal-lr/--no-anneal-lr", default=True, show_default=True,
              help="Decay both learning rates linearly to 0 over the run.")
@checkpoint_options(every=10_000)
@common_options
@click.pass_context
def actor_critic(ctx: click.Context, **params: Any) -> int:
    """One-step actor-critic on CartPole-v1; the critic's gradients are computed with autograd.grad, written
    into .grad and applied by RMSprop, as the tutorial's tf.gradients + apply_gradients. Claims: explicit ≡
    backward (bitwise), and a critic copied through a flat parameter vector or a state_dict gives identical outputs.
    """
    return run_lesson(ctx, "actor-critic", params)


@cli.command(short_help="One batch's gradient, split: accumulation and data-parallel all-reduce (torch.distributed).")
@click.option("--workers", type=int, default=2, show_default=True,
              help="Processes gradlab starts on this machine (gloo on 127.0.0.1); torchrun's count when it started "
                   "gradlab.")
@click.option("--micro-batches", type=int, default=4, show_default=True,
              help="K: accumulate the global batch in K parts (it must divide --batch-size unless --uneven).")
@click.option("--uneven", is_flag=True, help="Micro-batches of unequal sizes (100 in 3: 64/32/4).")
@click.option("--batch-size", type=int, default=100, show_default=True, help="B: samples in one global batch.")
@click.option("--steps", type=int, default=30, show_default=True, help="Optimizer steps of every training run.")
@click.option("--lr", type=float, default=0.1, show_default=True, help="SGD learning rate.")
@click.option("--clip-norm", type=float, default=0.1, show_default=True,
              help="Global-norm cap for clip-then-reduce vs reduce-then-clip.")
@click.option("--dtype", type=click.Choice(["float32", "float64"]), default="float32", show_default=True,
              help="float64 shows every equality at rounding level (bounds 1e-12 instead of 1e-6).")
@click.option("--backend", type=click.Choice(["auto", "gloo", "nccl"]), default="auto", show_default=True,
              help="auto: nccl when every worker has a CUDA GPU, else gloo.")
@click.option("--port", type=int, default=0, show_default=True,
              help="Rendezvous port on 127.0.0.1 (0: a free one). Ignored under torchrun.")
@click.option("--timeout", type=float, default=60.0, show_default=True,
              help="Seconds a worker waits for the others in a collective before the job fails.")
@common_options
@dataset_options("mnist-sample")
@click.pass_context
def ddp(ctx: click.Context, **params: Any) -> int:
    """Split one global batch over time (gradient accumulation) and over processes (data parallel with
    torch.distributed), and prove every split gives the full-batch gradient, or by how much it does not.

    gradlab starts --workers processes itself; under `torchrun --nproc-per-node N -m gradlab ddp` it joins
    torchrun's job instead, and rank 0 alone prints and writes files.
    """
    return run_lesson(ctx, "ddp", params)


def run_lesson(ctx: click.Context, name: str, params: dict[str, Any]) -> int:
    """Parse → Config → data → run → render/write. Returns the exit code (0 claims hold, 1 a claim failed)."""
    from gradlab.config import merge_config
    from gradlab.report.files import STDOUT, check_writable, same_file

    if params.get("quick"):  # the quick budget replaces defaults only: flags on the command line win
        from click.core import ParameterSource

        params = {**params, **{k: v for k, v in quick_values(name).items()
                               if ctx.get_parameter_source(k) == ParameterSource.DEFAULT}}
    params = merge_config(ctx, params)
    from gradlab.distributed import is_rank_zero

    if not is_rank_zero():  # a torchrun worker other than rank 0: it computes, rank 0 alone prints and writes
        params = {**params, "quiet": True, "explain": False, "json_path": None, "plot_path": None}
    check_writable(params.get("json_path"), "--json")
    check_writable(params.get("plot_path"), "--plot")
    if same_file(params.get("json_path"), params.get("plot_path")):
        raise GradlabError(f"--json {params['json_path']} and --plot {params['plot_path']} name the same file; give "
                           f"them different files")

    from gradlab import runner
    from gradlab.report import console as report

    config = runner.make_config(name, params)  # bad values fail here, before anything is printed or run
    to_stdout = STDOUT in (params.get("json_path"), params.get("plot_path"))
    console = report.make_console(quiet=params["quiet"], stderr=to_stdout)  # stdout then carries the file alone
    if params.get("explain"):
        from gradlab.report.explain import print_explanation

        print_explanation(runner.lesson_module(name), console)
    with report.progress_bar(console) as progress:
        result = runner.execute(name, params, console, progress, config)
    report.render(result, console)
    write_outputs(result, params, console)
    return result.exit_code


def quick_values(name: str) -> dict[str, Any]:
    """The option values lesson NAME's quick budget sets (LessonInfo.quick: the arguments `gradlab all --quick`
    gives it), parsed by its own command."""
    from click.core import ParameterSource

    from gradlab.lessons import LESSONS

    ctx = cli.commands[name].make_context(name, list(LESSONS[name].quick))
    return {k: v for k, v in ctx.params.items() if ctx.get_parameter_source(k) == ParameterSource.COMMANDLINE}


def write_outputs(result, params: dict[str, Any], console) -> None:
    from gradlab.report.files import STDOUT, write_json, write_plot

    for key, write in (("json_path", write_json), ("plot_path", write_plot)):
        if params.get(key):
            write(params[key], result)
            if params[key] != STDOUT:
                console.print(f"wrote {params[key]}", markup=False)


# ---------------------------------------------------------------------------------------------------------------
# Classroom commands: list, all, report, show
# ---------------------------------------------------------------------------------------------------------------

@cli.command("list", short_help="Every lesson: the tutorial idea, its main options, how long it takes.")
def list_lessons() -> int:
    """Every lesson with the TF-1 tutorial idea it reproduces, its main options, and its measured run times."""
    from rich.text import Text

    from gradlab.lessons import LESSONS, measured_runtimes
    from gradlab.report.console import FittedTable, make_console

    measured = measured_runtimes()
    times = measured.get("lessons", {})
    title = "gradlab lessons" + (f" — run times measured on {measured['cpus']} CPUs on {measured['measured']} "
                                 f"(`make runtimes`; start-up included)" if measured else "")
    rows = []
    for info in LESSONS.values():
        t = times.get(info.name, {})
        what = Text(info.idea)
        what.append(f"\n{info.options}", style="dim")
        rows.append([Text(f"gradlab {info.name}", no_wrap=True), what,
                     Text(f"{t['default_s']:.0f} s / {t['quick_s']:.0f} s" if t else "?", no_wrap=True)])
    console = make_console()
    console.print(FittedTable(title, ["lesson", "the tutorial idea it reproduces; main options", "default / --quick"],
                              rows, [False, False, True], show_lines=True))
    from gradlab import assets

    console.print(f"presets (--config NAME): {', '.join(assets.presets())}. Notebooks: `gradlab notebooks DIR`.")
    return 0


def _lesson_names(text: str | None) -> list[str]:
    from gradlab.lessons import LESSONS

    if not text:
        return list(LESSONS)
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise GradlabError(f"--lessons {text!r} names no lesson; give e.g. --lessons mnist,clip (or leave it out)")
    unknown = [n for n in names if n not in LESSONS]
    if unknown:
        raise GradlabError(f"--lessons: unknown lesson {unknown[0]!r}; choose from {', '.join(LESSONS)}")
    return names


def run_many(names: list[str], quick: bool, console, threads: int | None = None) -> list[tuple[str, Any, float]]:
    """Run each lesson with its quick or full arguments, rendering each result; return (name, result, wall s)."""
    import time

    from gradlab import runner
    from gradlab.lessons import LESSONS
    from gradlab.report import console as report
    from gradlab.threads import validate

    validate(threads)
    done = []
    for name in names:
        info = LESSONS[name]
        args = list(info.quick if quick else info.full) + (["--threads", str(threads)] if threads else [])
        params = cli.commands[name].make_context(name, args).params
        start = time.perf_counter()
        with report.progress_bar(console) as progress:
            result = runner.execute(name, params, console, progress)
        done.append((name, result, time.perf_counter() - start))
        report.render(result, console)
    return done


def _summary_rows(done) -> list[list[Any]]:
    return [[name, sum(c.passed for c in r.claims), sum(not c.passed for c in r.claims)
             + (1 if r.stopped else 0), wall] for name, r, wall in done]


@cli.command("all", short_help="Run every lesson in turn and summarise the claims (exit 1 if any fails).")
@click.option("--quick", is_flag=True, help="Small budgets and the bundled data; every claim is still checked.")
@click.option("--lessons", default=None, help="Comma-separated subset, e.g. mnist,clip (default: all).")
@click.option("--threads", type=int, default=None, help="CPU threads for every lesson (default: 1).")
@click.option("--quiet", is_flag=True, help="Print only the summary.")
def all_lessons(quick: bool, lessons: str | None, threads: int | None, quiet: bool) -> int:
    """Run every lesson (with --quick in about a minute on 2 CPU cores) and print a summary table."""
    from gradlab.report import console as report
    from gradlab.result import Table

    names = _lesson_names(lessons)
    done = run_many(names, quick, report.make_console(quiet=quiet), threads)
    rows = _summary_rows(done)
    console = report.make_console()
    console.print(report.render_table(Table("gradlab all" + (" --quick" if quick else ""),
                                            ["lesson", "claims passed", "claims failed", "wall s"], rows,
                                            [None, None, None, ".1f"])))
    ok, verdict = _verdict(done, rows)
    console.print(verdict, style="bold green" if ok else "bold red", markup=False)
    return 0 if ok else 1


def _verdict(done, rows) -> tuple[bool, str]:
    """(all hold?, one line): how many claims hold, or which failed (lesson: claim id; a stopped run counts)."""
    failed = [f"{name}: {c.id}" for name, r, _ in done for c in r.claims if not c.passed]
    failed += [f"{name}: stopped" for name, r, _ in done if r.stopped]
    if failed:
        return False, f"{len(failed)} claims failed: " + ", ".join(failed)
    return True, f"all {sum(row[1] for row in rows)} claims hold in {len(rows)} lesson{'s' * (len(rows) != 1)}"


@cli.command(short_help="Run every lesson and write one self-contained HTML page plus every lesson's JSON.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), required=True, help="Folder for index.html.")
@click.option("--quick", is_flag=True, help="The same quick runs as `gradlab all --quick`.")
@click.option("--lessons", default=None, help="Comma-separated subset (default: all).")
@click.option("--threads", type=int, default=None, help="CPU threads for every lesson (default: 1).")
@click.option("--quiet", is_flag=True, help="Print only where the report went.")
def report(out_dir: str, quick: bool, lessons: str | None, threads: int | None, quiet: bool) -> int:
    """Write OUT/index.html (tables, claims, explanations, plots embedded) and OUT/<lesson>.json.

    Nothing is written until every lesson has run; each file is written atomically.
    """
    import datetime
    import os
    import shutil
    from pathlib import Path

    import torch

    from gradlab.report import console as report
    from gradlab.report import html as html_report
    from gradlab.report.files import check_writable, write_bytes

    out = Path(out_dir)
    try:  # everything about --out is checked before any lesson runs
        if out.is_symlink() and not out.exists():
            raise GradlabError(f"--out {out_dir} is a symlink to {os.readlink(out)}, which does not exist; create "
                               f"that folder or give another --out")
        if out.exists() and not out.is_dir():
            raise GradlabError(f"--out {out_dir} is a file; give a folder for the report")
        if not out.parent.is_dir():
            raise GradlabError(f"--out {out_dir}: folder {out.parent} does not exist; create it first")
        check_writable(str(out / "index.html") if out.is_dir() else out_dir, "--out")
    except OSError as e:  # a name too long for the file system, say
        raise GradlabError(f"--out {shorten(out_dir)}: {e.strerror or e}; choose another folder") from None
    names = _lesson_names(lessons)
    done = run_many(names, quick, report.make_console(quiet=quiet), threads)
    sections, files = [], {}
    for name, result, wall in done:
        data = result.to_json()
        sections.append(html_report.result_section(result, wall, data))
        files[f"{name}.json"] = (json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n").encode()
    title = "gradlab report" + (" (quick)" if quick else "")
    summary = _summary_rows(done)
    command = "gradlab report --out " + out_dir + (" --quick" if quick else "") + \
        (f" --lessons {lessons}" if lessons else "") + (f" --threads {threads}" if threads else "")
    ok, verdict = _verdict(done, summary)
    made = {"command": command, "gradlab": __version__, "torch": torch.__version__,
            "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), "verdict": verdict}
    files["index.html"] = html_report.page(sections, summary, title, made, ok).encode()
    created = not out.exists()
    try:
        out.mkdir(exist_ok=True)
    except OSError as e:
        raise GradlabError(f"--out {out_dir}: cannot create the folder ({e.strerror}); choose another path") from None
    try:
        for fname, content in files.items():
            write_bytes(out / fname, content)
    except GradlabError:
        if created:  # leave nothing behind, not a folder with half the report
            shutil.rmtree(out, ignore_errors=True)
        raise
    console = report.make_console()
    console.print(verdict, style="bold green" if ok else "bold red", markup=False)
    console.print(f"wrote {out / 'index.html'} and {len(done)} JSON files", markup=False)
    return 0 if ok else 1


# ---------------------------------------------------------------------------------------------------------------
# Practice: exercises, starter files, checks
# ---------------------------------------------------------------------------------------------------------------

@cli.command(short_help="The exercises: the gradient code a student writes, checked by `gradlab check`.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
              help="Write the list as JSON objects (name, lesson, function, level, what) to this file (- for stdout).")
def exercises(json_path: str | None) -> int:
    """Every exercise: its lesson, its name, what to write, its level. `gradlab exercise NAME` writes a starter."""
    from rich.text import Text

    from gradlab.practice import listing
    from gradlab.report.console import FittedTable, make_console
    from gradlab.report.files import check_writable, write_bytes

    items = listing()
    if json_path:
        check_writable(json_path, "--json")
        write_bytes(json_path, (json.dumps(items, indent=2, ensure_ascii=False) + "\n").encode())
        return 0
    rows = [[Text(i["lesson"], no_wrap=True), Text(i["name"], no_wrap=True), Text(i["what"]),
             Text(str(i["level"]), no_wrap=True)] for i in items]
    make_console().print(FittedTable("gradlab exercises — write one with `gradlab exercise NAME`, check it with "
                                     "`gradlab check FILE`", ["lesson", "exercise", "what to write", "level"], rows,
                                     [False, False, False, True]))
    return 0


@cli.command(short_help="Write an exercise's starter file (signature, math, shapes, the check command).")
@click.argument("name")
@click.option("--out", "out_path", type=click.Path(dir_okay=False), default=None,
              help="The file to write (default: FUNCTION.py in the current folder).")
@click.option("--force", is_flag=True, help="Replace the file if it exists.")
def exercise(name: str, out_path: str | None, force: bool) -> int:
    """Write the starter file of exercise NAME: the function to write, its math and shapes, the TF-1 line it
    replaces, a body that raises NotImplementedError, and the command that checks it."""
    import os

    from gradlab.practice import EXERCISES
    from gradlab.practice.check import starter
    from gradlab.report.files import check_writable, write_bytes

    if name not in EXERCISES:
        import difflib

        close = difflib.get_close_matches(name, EXERCISES, 1)
        raise GradlabError(f"unknown exercise {name!r}" + (f"; did you mean {close[0]}?" if close else "")
                           + " (gradlab exercises lists them)")
    ex = EXERCISES[name]
    out = out_path or f"{ex.function}.py"
    if os.path.lexists(out) and not force:
        raise GradlabError(f"{out} already exists; add --force to replace it, or --out another file")
    check_writable(out, "--out")
    write_bytes(out, starter(ex).encode())
    click.echo(f"wrote {out}: write {ex.function}(), then run `gradlab check {out}`")
    return 0


@cli.command("check", short_help="Grade a solution with the lesson's own claims, and diagnose a wrong one.")
@click.argument("path", type=click.Path())
@click.option("--exercise", "exercise_name", default=None, help="The exercise (default: the one the file names).")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
              help="Write the result (checks, claims, diagnosis, points) to this file (- for standard output).")
@click.option("--junit", "junit_path", type=click.Path(dir_okay=False), default=None,
              help="Write JUnit XML (GitHub Classroom, CI): one test case per check.")
@click.option("--gradescope", "gradescope_path", type=click.Path(dir_okay=False), default=None,
              help="Write Gradescope's autograder results.json: one test per check, one point each.")
@click.option("--quiet", is_flag=True, help="Print nothing; use the exit code (and the files).")
def check_cmd(path: str, exercise_name: str | None, json_path: str | None, junit_path: str | None,
              gradescope_path: str | None, quiet: bool) -> int:
    """Run PATH's function in a separate process (time and memory limits) on generated inputs, edge cases
    included, compare it with the reference computed here, run the lesson's claims on its outputs, and name the
    mistake when a wrong answer matches a known one. Exit 0 when every check passes, 1 when one fails.

    PATH may be a folder of submissions (the *.py files in it): each is checked, then one summary table says who
    passed what (the files --json, --junit and --gradescope then cover them all)."""
    from pathlib import Path

    from gradlab.practice import grading
    from gradlab.practice.check import exercise_of, run_check
    from gradlab.report import console as report
    from gradlab.report.files import STDOUT, check_writable, write_bytes

    folder = Path(path).is_dir()
    files = sorted(str(p) for p in Path(path).glob("*.py")) if folder else [path]
    if folder and not files:
        raise GradlabError(f"{path} has no .py files to check")
    todo = [(f, exercise_of(f, exercise_name)) for f in files]  # every file names its exercise, before any runs
    for target, option in ((json_path, "--json"), (junit_path, "--junit"), (gradescope_path, "--gradescope")):
        check_writable(target, option)
    console = report.make_console(quiet=quiet, stderr=STDOUT in (json_path, junit_path, gradescope_path))
    from concurrent.futures import ThreadPoolExecutor

    import torch

    with ThreadPoolExecutor(2) as pool:  # a class's folder: two submissions at a time, each in its own process
        checked = list(pool.map(lambda item: run_check(*item), todo))
    results = []
    for result in checked:
        result.torch, result.version, result.device = torch.__version__, __version__, "cpu"
        result.threads, result.threads_why = 1, "the submission runs on one thread"
        checks = grading.points(result)
        result.metrics["points"] = {"score": sum(t["score"] for t in checks), "max_score": len(checks)}
        results.append(result)
        if not folder:
            report.render(result, console)
            if result.metrics.get("trace"):
                console.print("your traceback (the frames of your own file):", style="dim")
                console.print(result.metrics["trace"], markup=False, highlight=False)
    if folder:
        from gradlab.result import Table

        rows = [[Path(r.config["file"]).name, r.metrics["exercise"], r.metrics["points"]["score"],
                 r.metrics["points"]["max_score"], "passed" if r.exit_code == 0 else
                 (r.stopped or r.metrics.get("diagnosis", "a check failed"))] for r in results]
        console.print(report.render_table(Table(f"gradlab check {path}: {sum(r.exit_code == 0 for r in results)} "
                                                f"of {len(results)} submissions pass",
                                                ["file", "exercise", "points", "of", "verdict"], rows)))
    data = [r.to_json() | {"points": r.metrics["points"]} for r in results]
    outputs = ((json_path, lambda: json.dumps(data[0] if not folder else data, indent=2, ensure_ascii=False) + "\n"),
               (junit_path, lambda: grading.junit(results)), (gradescope_path, lambda: grading.gradescope(results)))
    for target, text in outputs:
        if target:
            write_bytes(target, text().encode())
            if target != STDOUT:
                console.print(f"wrote {target}", markup=False)
    return 0 if all(r.exit_code == 0 for r in results) else 1


@cli.command(short_help="Copy the lesson notebooks (one per lesson, for Jupyter or Colab) into a folder.")
@click.argument("folder", type=click.Path(file_okay=False))
@click.option("--source", default=None,
              help="What each notebook's first cell pip-installs where gradlab is missing (Colab): a wheel's URL, or "
                   "git+https://…; default: the upload of a gradlab wheel beside the notebook.")
@click.option("--force", is_flag=True, help="Replace notebooks that are already in FOLDER.")
def notebooks(folder: str, source: str | None, force: bool) -> int:
    """Write the eight lesson notebooks into FOLDER (created if needed), ready to open in JupyterLab
    (`jupyter lab FOLDER`, with `pip install 'gradlab[notebooks]'`) or to upload to Colab."""
    from pathlib import Path

    from gradlab import assets
    from gradlab.report.files import write_bytes

    found = assets.notebooks()
    if not found:
        raise GradlabError("the notebooks are missing from this installation; reinstall gradlab")
    out = Path(folder)
    if out.exists() and not out.is_dir():
        raise GradlabError(f"{folder} is a file; give a folder for the notebooks")
    there = [p.name for p in found if (out / p.name).exists()]
    if there and not force:
        raise GradlabError(f"{folder} already has {', '.join(there)}; add --force to replace them, or choose another "
                           f"folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise GradlabError(f"cannot create {folder} ({e.strerror}); choose another folder") from None
    for path in found:
        nb = json.loads(path.read_text(encoding="utf-8"))
        if source is not None:
            nb["cells"][1]["source"] = set_source("".join(nb["cells"][1]["source"]), source)
        write_bytes(out / path.name, (json.dumps(nb, indent=1, ensure_ascii=False) + "\n").encode())
    click.echo(f"wrote {len(found)} notebooks to {folder}: open them with `jupyter lab {folder}`, or upload one to "
               f"Colab (File > Upload notebook)")
    return 0


SOURCE_LINE = 'SOURCE = ""'


def set_source(cell: str, source: str) -> str:
    """The install cell with SOURCE set: what pip installs where gradlab is missing."""
    if SOURCE_LINE not in cell:
        raise GradlabError("the notebooks' install cell has no SOURCE line; reinstall gradlab")
    return cell.replace(SOURCE_LINE, f"SOURCE = {json.dumps(source)}", 1)


@cli.command(short_help="Print the tables and claims of a saved --json result again.")
@click.argument("path", type=click.Path(dir_okay=False))
def show(path: str) -> int:
    """Re-render a result saved with --json (or by gradlab report): the same tables and claims."""
    from gradlab.report import console as report
    from gradlab.result import load_result

    data = load_result(path)
    report.render(data, report.make_console())
    return 0 if all(c["passed"] for c in data["claims"]) and not data.get("stopped") else 1


def main() -> None:
    cli()
