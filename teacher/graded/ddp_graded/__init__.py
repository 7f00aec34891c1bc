"""ddp_graded: gradient accumulation over micro-batches whose targets include padding, a graded variant of
ddp.accumulated_grad (the same skill: .backward() adds into .grad, each micro-batch weighted so that the sum is the
whole batch's mean gradient) whose answer is in no student's gradlab: the base exercise's answer and the lesson's
accumulate divide by B, the batch's size, and here the mean is over the targets that count. Torch-free.

Sources: F.cross_entropy's mean with ignore_index: "When size_average is True, the loss is averaged over non-ignored
targets." (torch/nn/modules/loss.py, CrossEntropyLoss, torch 2.14; ignore_index's default is −100). The same
accumulation bug in LLM training, each micro-batch's loss averaged over its own tokens: huggingface/transformers
pull request #34191 ("Fix Gradient Accumulation issue", 2024) and meta-pytorch/torchtune pull request #1875
("Normalize CE loss by total number of (non-padding) tokens").
"""

from gradlab.kit.exercise import Exercise

EXERCISES = [
    Exercise(
        function="accumulate", level=3,
        what="the gradient of one batch's mean cross-entropy over its counted targets (padding −100 left out), "
             "accumulated over micro-batches",
        signature="def accumulate(model, x, y, sizes):",
        doc="""The whole batch's loss is F.cross_entropy(model(x), y): its mean over the M targets that count. A
        target equal to −100 is padding (F.cross_entropy's ignore_index): it adds nothing and is not counted.

        g = (1/M) Σ_{i: y_i ≠ −100} ∇ℓ_i         M = the number of targets y_i ≠ −100 in the whole batch

        Compute g micro-batch by micro-batch, as when the whole batch does not fit in memory: run the model on each
        part x.split(sizes) on its own (no forward pass may see more samples than the largest part) and call
        .backward() for each, which adds into .grad. The parts hold different numbers of counted targets, and one
        may hold padding only.

        Shapes: model a torch.nn.Module, float64 (its .grad may hold anything on entry); x (B, 20); y (B,) int64,
        class numbers 0 to 4 or −100; sizes a list of K part sizes that add up to B (they may differ). Return
        [p.grad for p in model.parameters()] after the last part. The check runs it on equal and unequal parts,
        a part of padding only, one part, and the same batch without and with padding.""",
        claims={"acc": ("your accumulated gradient ≡ autograd through F.cross_entropy over the whole batch, float64 "
                        "(largest |yours − expected| ÷ max(1, largest |expected|), tensor by tensor)", 1e-9)}),
]
