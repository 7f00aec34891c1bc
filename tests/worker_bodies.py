"""Bodies for gradlab.kit.workers.start in tests: importable by a spawned worker without torch (this module imports
only the standard library), so a worker starts in a fraction of a second."""

import time


def rank_1_fails_rank_0_hangs(rank: int, report) -> None:
    if rank == 1:
        raise ValueError("rank 1 gives up")
    time.sleep(60)
