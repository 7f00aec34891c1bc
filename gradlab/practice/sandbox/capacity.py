"""How many checks run at once, and each sandbox's size, from what gradlab itself is given (cgroups.budget(): its CPU
affinity, the CPU quota, memory limit and process limit of the cgroups it runs in, the machine's available memory):
a container started with --cpus=1 grades one file at a time in a sandbox of 1 CPU, a 32-core server 32 at a time.

A check counts CHECK_MEMORY and gradlab itself GRADLAB_MEMORY (measured on 2026-11-28: a sandbox's cgroup peaked at
300 MB on mnist.sgd_step and mnist.softmax_grad, 330 MB on a gloo exercise's four processes; gradlab's own process at
757 MB of maximum RSS after grading two files, torch and the references loaded).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from gradlab.practice.sandbox import cgroups, slots
from gradlab.practice.sandbox.limits import Limits

CHECK_MEMORY = 512 << 20  # what one check is counted as (its measured peak, 330 MB, and room)
GRADLAB_MEMORY = 1 << 30  # what gradlab's own process is counted as (757 MB measured)
GLOO_TASKS = 32  # the fewest tasks a sandbox needs (gloo with 3 workers: Limits.nproc)


@dataclass(frozen=True)
class Plan:
    """AT_ONCE checks at a time, each sandbox with CPUS CPUs, GROUP_MEMORY bytes and NPROC tasks at most; WHY: the
    bound that chose AT_ONCE, in words."""

    at_once: int
    cpus: float
    group_memory: int
    nproc: int
    why: str


def plan_for(budget: cgroups.Budget, one_at_a_time: bool = False) -> Plan:
    """The Plan that fits BUDGET; ONE_AT_A_TIME (the userns mode without a cgroup, pool.at_once): one check at a time,
    whatever the budget."""
    limits, spare = Limits(), budget.memory - GRADLAB_MEMORY
    bounds = {f"{budget.cpus:g} CPU{'' if budget.cpus == 1 else 's'}": math.floor(budget.cpus),
              f"{budget.memory >> 20} MB of memory": spare // CHECK_MEMORY,
              f"{slots.SLOTS} sandbox slots": slots.SLOTS}
    if budget.pids is not None:
        bounds[f"{budget.pids} free tasks"] = budget.pids // GLOO_TASKS
    if one_at_a_time:
        bounds = {"no cgroup in the userns mode": 1}
    why, most = min(bounds.items(), key=lambda kv: kv[1])
    at_once = max(1, int(most))
    memory = min(limits.group_memory, max(CHECK_MEMORY, spare // at_once))
    nproc = limits.nproc if budget.pids is None else max(8, min(limits.nproc, budget.pids // at_once))
    return Plan(at_once=at_once, cpus=min(limits.cpus, budget.cpus), group_memory=memory, nproc=nproc, why=why)


def plan(mode: str) -> Plan:
    """This process's Plan for sandboxes of MODE (gradlab.practice.sandbox.modes.detect(); the budget is read once:
    cgroups.budget)."""
    return plan_for(cgroups.budget(), mode == "userns" and not cgroups.available()[0])


def limits(mode: str, timeout_s: float | None = None) -> Limits:
    """A sandbox's Limits under plan(MODE): the CPUs, memory and tasks of its cgroup (and RLIMIT_NPROC) fitted;
    TIMEOUT_S its time limit (default Limits')."""
    p, base = plan(mode), Limits()
    return replace(base, timeout_s=timeout_s or base.timeout_s, cpus=p.cpus, group_memory=p.group_memory,
                   nproc=p.nproc)
