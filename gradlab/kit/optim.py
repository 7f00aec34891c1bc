"""TensorFlow-1's RMSProp as a torch optimizer: `TFRMSprop`, what `tf.train.RMSPropOptimizer(lr)` did.

`torch.optim.RMSprop` is another algorithm under the same name. Side by side (TF 1.15
`tensorflow/python/training/rmsprop.py`, kernel `ApplyRMSProp` in `tensorflow/core/kernels/training_ops.cc`;
torch 2.14 `torch/optim/rmsprop.py`):

    | | TF-1 `RMSPropOptimizer` | `torch.optim.RMSprop` |
    | mean-square decay | decay = 0.9 | alpha = 0.99 |
    | ε | 1e-10, inside the root: g / √(ms + ε) | 1e-8, outside: g / (√v + ε) |
    | mean square at the start | ones (`init_ops.ones_initializer`, rmsprop.py lines 118-123) | zeros |
    | first step | lr·g / √(0.9 + 0.1 g²): small for small g | lr·g / (√0.01·|g| + ε) ≈ 10·lr·sign(g) where |g| ≫ 10ε |

The kernel (training_ops.cc, v1.15.0, lines 461-464 and 478-482), which the lines below follow:

    ms  += (g² − ms)·(1 − ρ)                          ms starts at 1
    mg  += (g − mg)·(1 − ρ)                           centered only; mg starts at 0
    mom  = momentum·mom + lr·g / √(ms [− mg²] + ε)    mom starts at 0
    var −= mom

This module imports torch only, so it can run anywhere a torch optimizer can.
"""

from __future__ import annotations

import torch


class TFRMSprop(torch.optim.Optimizer):
    """TF-1's `tf.train.RMSPropOptimizer(learning_rate, decay=0.9, momentum=0.0, epsilon=1e-10, centered=False)`
    (rmsprop.py v1.15.0 lines 61-68), same defaults, same formula: ε inside the square root, the mean square
    starting at ones, the "mg" and "momentum" slots at zeros (lines 116-127), "plain momentum, not Nesterov
    momentum" (line 28) applied to the already-scaled step. Dense gradients only: TF-1's sparse path, which updated
    only the rows a gradient touched (lines 71-81), is not reproduced."""

    def __init__(self, params, lr: float, decay: float = 0.9, momentum: float = 0.0, epsilon: float = 1e-10,
                 centered: bool = False):
        if not lr >= 0:
            raise ValueError(f"TFRMSprop: lr must be ≥ 0, got {lr}")
        if not 0 <= decay <= 1:
            raise ValueError(f"TFRMSprop: decay must be in [0, 1], got {decay}")
        if not momentum >= 0:
            raise ValueError(f"TFRMSprop: momentum must be ≥ 0, got {momentum}")
        if not epsilon >= 0:
            raise ValueError(f"TFRMSprop: epsilon must be ≥ 0, got {epsilon}")
        super().__init__(params, {"lr": lr, "decay": decay, "momentum": momentum, "epsilon": epsilon,
                                  "centered": centered})

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            lr, rho, momentum, eps = group["lr"], group["decay"], group["momentum"], group["epsilon"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    raise RuntimeError("TFRMSprop does not take sparse gradients")
                g, state = p.grad, self.state[p]
                if not state:
                    state["ms"] = torch.ones_like(p)  # the "rms" slot: ones_initializer (rmsprop.py 118-123)
                    state["mom"] = torch.zeros_like(p)  # the "momentum" slot: zeros
                    if group["centered"]:
                        state["mg"] = torch.zeros_like(p)  # the "mg" slot: zeros
                ms, mom = state["ms"], state["mom"]
                ms.add_((g * g - ms) * (1 - rho))  # ms += (g² − ms)·(1 − ρ)
                if group["centered"]:
                    mg = state["mg"]
                    mg.add_((g - mg) * (1 - rho))  # mg += (g − mg)·(1 − ρ)
                    denom = (ms - mg * mg + eps).sqrt()  # √(ms − mg² + ε)
                else:
                    denom = (ms + eps).sqrt()  # √(ms + ε): ε inside the root
                mom.mul_(momentum).add_(g * lr / denom)  # mom = momentum·mom + lr·g/√(…)
                p.sub_(mom)  # var −= mom
        return loss
