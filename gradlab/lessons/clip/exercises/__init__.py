"""What students write in `gradlab clip`: each exercise's text (torch-free: `gradlab exercises` reads it). How a
submission is called is harness.py; its reference, known mistakes and claims are checks.py; model answers are
answers.py."""

from gradlab.practice.exercise import Exercise

EXERCISES = [
    Exercise(
        "clip_by_global_norm", 2,
        "clip a list of gradients by their global norm, as tf.clip_by_global_norm",
        "def clip_by_global_norm(grads, clip_norm):",
        """Scale every gradient by one factor so that their global norm is at most clip_norm.

        global_norm = sqrt(Σ_i ‖g_i‖²)                    over every tensor of the list together
        g_i ← g_i · clip_norm / max(global_norm, clip_norm)  one scale for all: the direction is kept

        Shapes: grads, a list of tensors of any shapes; clip_norm a positive float. Return a new list of tensors
        of the same shapes. TF-1: clipped, _ = tf.clip_by_global_norm(grads, clip_norm).""",
        forbidden=("torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad_norm", "torch.nn.utils.get_total_norm")),
]
