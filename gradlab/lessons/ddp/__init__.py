"""`gradlab ddp` (beyond the tutorials): one batch's gradient split over micro-batches and over workers.

This folder is the lesson: settings.py (its options), lesson.py (the math and the run) and its rooms by where their
code runs (batches.py: every process; single.py: this process; ranks.py: every worker, in lockstep; report.py: the
tables and curves), exercises/ (what students write). This file is its entry in the registry (gradlab.lessons),
read without torch.
"""

from gradlab.lessons.ddp.settings import Config
from gradlab.lessons.info import LessonInfo

INFO = LessonInfo(
    name="ddp",
    config=Config,
    idea="beyond the tutorials: one batch's gradient split over micro-batches and over workers (all-reduce)",
    short_help="One batch's gradient, split: accumulation and data-parallel all-reduce (torch.distributed).",
    help="""Split one global batch over time (gradient accumulation) and over processes (data parallel with
    torch.distributed), and prove every split gives the full-batch gradient, or by how much it does not.

    gradlab starts --workers processes itself; under `torchrun --nproc-per-node N -m gradlab ddp` it joins
    torchrun's job instead, and rank 0 alone prints and writes files.
    """,
    needs_data=True,
    dataset_default="mnist-sample",
    quick={"steps": 10},
    list_note="torchrun -m gradlab ddp",
    step_inputs={"images": 2},
    answered_by={},
    passes_check={
        "sync_gradients": ("gradlab.lessons.ddp.exercises.checks._sync_reference",),
        "accumulated_grad": ("gradlab.lessons.ddp.exercises.checks._acc_reference",),
        "average_gradients": ("gradlab.lessons.ddp.exercises.checks._avg_reference",),
    },
    graded_variant="ddp_graded.accumulate",
)
