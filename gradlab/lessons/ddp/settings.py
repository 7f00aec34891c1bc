"""The settings of `gradlab ddp`, each declared once (gradlab.kit.options), and what can be checked before any process
starts. No torch here: `gradlab ddp --help` reads this module."""

from __future__ import annotations

import math
from dataclasses import dataclass

from gradlab.errors import check_option
from gradlab.kit import distributed
from gradlab.kit import options as o

DTYPE_NAMES = ("float32", "float64")
MAX_STEPS = 1_000_000
MAX_BATCH = 10_000  # a global batch larger than the bundled sample's training images would repeat images


@dataclass
class Config(o.LessonConfig):
    """Settings of `gradlab ddp`; the seed orders the batches and draws the mlp's initial weights."""

    workers: int = o.option(2, "Processes gradlab starts on this machine (gloo on 127.0.0.1); torchrun's count when "
                               "it started gradlab.", listed=True, bounds=o.at_least(1))
    micro_batches: int = o.option(4, "K: accumulate the global batch in K parts (it must divide --batch-size unless "
                                     "--uneven).", listed=True, bounds=o.at_least(1))
    uneven: bool = o.option(False, "Micro-batches of unequal sizes (100 in 3: 64/32/4).", listed=True)
    batch_size: int = o.batch_size(100, "B: samples in one global batch.", bounds=None)  # checked with its reason
    steps: int = o.option(30, "Optimizer steps of every training run.", bounds=o.between(1, MAX_STEPS))
    lr: float = o.option(0.1, "SGD learning rate.", bounds=o.positive())
    clip_norm: float = o.option(0.1, "Global-norm cap for clip-then-reduce vs reduce-then-clip.",  # below the norms
                                bounds=o.positive())
    dtype: str = o.option("float32", "float64 shows every equality at rounding level (bounds 1e-12 instead of 1e-6).",
                          choices=DTYPE_NAMES, listed=True)
    backend: str = o.option("auto", "auto: nccl when every worker has a CUDA GPU, else gloo.",
                            choices=distributed.BACKENDS, listed=True)
    port: int = o.option(0, "Rendezvous port on 127.0.0.1 (0: a free one). Ignored under torchrun.")
    timeout: float = o.option(60.0, "Seconds a worker waits for the others in a collective before the job fails.")

    def __post_init__(self) -> None:
        check_option(self.dtype in DTYPE_NAMES, "dtype",
                     lambda say: f"unknown {say('dtype')} {self.dtype!r}: use float32 or float64")
        check_option(self.backend in distributed.BACKENDS, "backend",
                     lambda say: f"unknown {say('backend')} {self.backend!r}: use one of "
                                 f"{', '.join(distributed.BACKENDS)}")
        super().__post_init__()  # the declared bounds
        check_option(1 <= self.batch_size <= MAX_BATCH, "batch_size", f"must be between 1 and {MAX_BATCH:,} (the "
                     f"bundled training images), got {self.batch_size}", example=100)
        check_option(self.workers <= self.batch_size, "workers",
                     lambda say: f"{say('workers', self.workers)} is more than the {self.batch_size} samples of the "
                                 f"global batch: a worker would have nothing to do; use fewer {say('workers')} or a "
                                 f"larger {say('batch_size')}")
        self._check_micro_batches()
        check_option(isinstance(self.timeout, int | float) and 1 <= self.timeout <= 86400, "timeout",
                     f"must be between 1 and 86400 seconds, got {self.timeout!r}", example=60)

    def _check_micro_batches(self) -> None:
        """K micro-batches: at least one sample each, in every worker's shard; equal, unless --uneven."""
        check_option(self.micro_batches <= self.batch_size, "micro_batches",
                     lambda say: f"{say('micro_batches', self.micro_batches)} is more than the {self.batch_size} "
                                 f"samples of the batch; use at most {say('micro_batches', self.batch_size)}")
        check_option(self.uneven or self.batch_size % self.micro_batches == 0, "micro_batches",
                     lambda say: f"{say('micro_batches', self.micro_batches)} does not divide "
                                 f"{say('batch_size', self.batch_size)}; use a divisor (e.g. "
                                 f"{divisor_near(self.batch_size, self.micro_batches)}) or add {say('uneven', True)}")
        check_option(not self.uneven or self.micro_batches >= 2, "uneven",
                     lambda say: f"{say('uneven', True)} needs {say('micro_batches', 2)} or more")
        smallest = self.batch_size // self.workers
        check_option(self.micro_batches <= smallest, "micro_batches",
                     lambda say: f"{say('micro_batches', self.micro_batches)} is more than the {smallest} samples of "
                                 f"the smallest worker's shard ({say('batch_size', self.batch_size)} over "
                                 f"{self.workers} workers); use fewer micro-batches")

    def check_launch(self, device: str) -> None:
        """The port, the backend against the GPUs, torchrun's variables: before anything runs."""
        launched = distributed.torchrun_rank()
        if launched is None:
            distributed.check_port(self.port)
        if self.backend == "nccl":
            device_type = "cuda" if device in ("auto", "cuda") else device
            distributed.choose_backend("nccl", device_type, 1 if launched else self.workers)

    @classmethod
    def reports_here(cls) -> bool:
        """Under torchrun every rank computes and rank 0 alone prints and writes files."""
        return distributed.is_rank_zero()


def divisor_near(n: int, k: int) -> int:
    """The divisor of N nearest to K (the smaller on a tie); divisors come in pairs d, n/d with d ≤ √n."""
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return min({*small, *(n // d for d in small)}, key=lambda d: (abs(d - k), d))
