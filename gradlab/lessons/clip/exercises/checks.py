"""The exercises of `gradlab clip`, on gradlab's side: each one's reference answer, its known mistakes (a realistic
wrong implementation and what to tell its author) and what its checks claim. Never imported beside a submission."""

from __future__ import annotations

import torch

from gradlab.lessons.clip.exercises.harness import HARNESSES
from gradlab.practice.exercise import Checks, Mistake
from gradlab.training import global_norm, torch_clip

# ------------------------------------------------------------------------------------------- clip_by_global_norm

def _clip_reference(grads, clip_norm):
    return torch_clip([g.detach() for g in grads], clip_norm)[1]  # torch.nn.utils.clip_grad_norm_


def _clip_each(grads, clip_norm):
    return [g * clip_norm / max(float(g.norm()), clip_norm) for g in grads]


def _clip_always(grads, clip_norm):
    norm = float(torch.sqrt(sum((g * g).sum() for g in grads)))
    return [g * clip_norm / norm for g in grads]


def _clip_values(grads, clip_norm):
    return [g.clamp(-clip_norm, clip_norm) for g in grads]


def _clip_extra(outs: list[dict], cases: list[dict]) -> list[tuple[str, float, float, str]]:
    over = max(float(global_norm(o["grads"])) / c["clip_norm"] for o, c in zip(outs, cases, strict=True))
    cosines = [float(torch.nn.functional.cosine_similarity(torch.cat([t.reshape(-1) for t in o["grads"]]),
                                                           torch.cat([t.reshape(-1) for t in c["grads"]]), dim=0))
               for o, c in zip(outs, cases, strict=True) if float(global_norm(c["grads"])) > 0]
    return [("after your clipping the global norm is at most clip_norm (max of norm / clip_norm)", over,
             1 + 1e-5, "<="),
            ("the direction is kept: cosine between clipped and original gradients (min)", min(cosines),
             1 - 1e-6, ">=")]


CLIP = Checks(
    harness=HARNESSES["clip_by_global_norm"], reference=_clip_reference,
    mistakes=[
        Mistake("per tensor", _clip_each, lambda s, r: "you clipped each tensor by its own norm (tf.clip_by_norm): "
                "the global norm takes every tensor together, sqrt(Σ_i ‖g_i‖²), and one scale serves them all"),
        Mistake("always rescaled", _clip_always, lambda s, r: "you rescaled the gradients to the cap even when their "
                "norm was below it (and 0/0 on zero gradients): divide by max(global_norm, clip_norm)"),
        Mistake("by value", _clip_values, lambda s, r: "you clipped each element to ±clip_norm (tf.clip_by_value): "
                "that changes the direction; scale all gradients by one factor instead"),
    ],
    claims={"clip": ("your clipped gradients ≡ torch.nn.utils.clip_grad_norm_'s (max relative |Δ| over the inputs)",
                     1e-5)},
    extra=_clip_extra)


CHECKS: dict[str, Checks] = {
    "clip_by_global_norm": CLIP,
}
