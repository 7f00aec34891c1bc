"""Advice for an exception a submission raised, when its message is one students meet: what it means and the fix, made
from the sizes and dtypes the message measures and the student's line the sandbox quotes."""

from __future__ import annotations

import re

from gradlab.kit.exercise import Checks


def _line(error: str) -> str:
    """The student's line that raised, as the sandbox's one-line error quotes it ("(line 7: z = x @ W)"), or ""."""
    found = re.search(r"\(line \d+: (.*?)\)(?:; the tensors on that line|$)", error)
    return found[1] if found else ""


def _sizes(error: str) -> str:
    """A size mismatch, measured: which dimension, and its size in each operand."""
    found = re.search(r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\) at non-singleton "
                      r"dimension (\d+)", error)
    said = (f"the operands' shapes do not broadcast: lined up from their last dimension, dimension {found[3]} of "
            f"the result is {found[1]} in one and {found[2]} in the other" if found
            else "two operands' shapes do not broadcast")
    code = _line(error)
    reduced = re.search(r"\b(sum|max|min|mean|logsumexp|norm|amax|amin|prod|argmax|argmin)\(([^()]*)\)", code)
    axis = re.search(r"(?:dim\s*=\s*|^\s*)(-?\d+)\s*$", reduced[2]) if reduced and reduced[2].strip() else None
    if axis and axis[1] == "0" and found:
        return (f"{said}; your line reduces over dim=0 ({reduced[1]}(…, dim=0)): with the batch first, that leaves "
                "one number per column where one per row (per sample) is expected: reduce over the other dimension")
    if reduced and axis and "keepdim" not in code:
        return (f"{said}; your line reduces with {reduced[1]}(…, dim) without keepdim=True, which drops that "
                f"dimension, so the result no longer lines up with the tensor it came from: keepdim=True keeps it "
                "(size 1)")
    column = _lost_column(error)
    if column:
        return f"{said}; {column}"
    return (f"{said}: the shapes of the tensors on your line are listed after it; compare each with the shapes the "
            "starter gives")


def _lost_column(error: str) -> str:
    """Two tensors on the student's line whose shapes are (N,) and (N, K), measured: the first lines up with the
    second's first dimension, but broadcasting lines shapes up from the last."""
    listed = re.search(r"; the tensors on that line: (.*)$", error)
    shapes = re.findall(r"(\w+) \(([\d, ]*)\)", listed[1]) if listed else []
    dims = [(name, tuple(int(v) for v in shape.replace(" ", "").split(",") if v)) for name, shape in shapes]
    for name, a in dims:
        for other, b in dims:
            if len(a) == len(b) + 1 and a[:-1] == b and a[-1] == b[-1] and len(b) >= 1:
                return (f"{name} {a} has one dimension more than {other} {b}, its last of the same size: an (N, 1) "
                        "broadcast against an (N,) made it upstream, an (N, N) where N numbers belong: squeeze the "
                        "(N, 1) where it is made (a network's (…, 1) output: .squeeze(-1))")
            if len(a) == 1 and len(b) == 2 and a[0] == b[0] and b[1] != a[0]:
                return (f"{name} {a} holds one number per row of {other} {b}, but broadcasting lines shapes up "
                        f"from the last dimension: make it a column, {name}[:, None] (keepdim=True where a reduction "
                        "made it)")
    return ""


def _matmul(error: str) -> str:
    """A matrix product whose inner sizes differ, measured: the two shapes, and which operand transposed fits."""
    vec = re.search(r"mat \((\d+)x(\d+)\), vec \((\d+)\)", error)
    if vec:
        a, b, c = vec.groups()
        said = f"a matrix-vector product ({a}×{b}) @ ({c},): the matrix has {b} columns, the vector {c} entries"
        return (f"{said}; the matrix transposed, ({b}×{a}), would fit: is it the transpose of what you meant "
                f"(v @ J is Σ_i v_i J[i])?" if a == c else f"{said}: compare each with the shapes the starter gives")
    found = re.search(r"\((\d+)x(\d+) and (\d+)x(\d+)\)", error)
    if not found:
        return "a matrix product whose inner sizes differ: the columns of the first must equal the rows of the second"
    a, b, c, d = found.groups()
    said = f"a matrix product ({a}×{b}) @ ({c}×{d}): the inner sizes {b} and {c} differ"
    if b == d:
        return f"{said}; the second operand transposed, ({d}×{c}), would fit: is it the transpose of what you meant?"
    if a == c:
        return f"{said}; the first operand transposed, ({b}×{a}), would fit: is it the transpose of what you meant?"
    return f"{said}: compare each operand's shape with the shapes the starter gives"


def _dtypes(error: str) -> str:
    found = re.search(r"(?:got:?|found|type) (\w+)(?: (?:!=|and|but found)|,) (\w+)", error)
    which = f" ({found[1]} and {found[2]})" if found else ""
    return (f"two tensors of different dtypes{which} met in one operation, which PyTorch does not convert for you: "
            "keep the dtype the inputs arrive with (no .double(), .float() or torch.tensor(…) of your own without "
            "dtype=x.dtype); the dtype of each tensor on your line is listed after it")


def _bounds(error: str) -> str:
    """An index past the end of a dimension, measured: an integer tensor on the student's line with as many entries
    as that dimension's size (K), beside a tensor of N rows: one index per column where one per row belongs."""
    said = "an index past the end of a dimension (the tensors on your line are listed after it, with their shapes)"
    size = re.search(r"dimension (\d+) with size (\d+)", error)
    listed = re.search(r"; the tensors on that line: (.*)$", error)
    if not size or not listed:
        return said
    shapes = [(name, tuple(int(v) for v in shape.replace(" ", "").split(",") if v), dtype)
              for name, shape, dtype in re.findall(r"(\w+) \(([\d, ]*)\) (\w+)", listed[1])]
    k = int(size[2])
    index = next((n for n, s, d in shapes if s == (k,) and d.startswith(("int", "uint"))), None)
    rows = next(((n, s) for n, s, d in shapes if n != index and len(s) >= 1 and s[0] != k), None)
    if index is None or rows is None:
        return said
    return (f"{said}; {index} ({k},) has as many entries as dimension {size[1]} has ({k}), where one per row of "
            f"{rows[0]} {rows[1]} ({rows[1][0]}) is expected: an index made by a reduction over dim=0 (argmax(dim=0), "
            "max(0)) has one entry per column; over dim=1 (argmax(dim=1)), one per row")


ERRORS = [  # (text in PyTorch's message, what it means and the fix: a sentence, or one made from the message)
    ("a view of a leaf Variable that requires grad is being used in an in-place operation",
     "an in-place update of part of a tensor that requires grad (W[0] -= …, x[i] = …): autograd forbids it on a "
     "leaf. Build a new tensor (torch.where, torch.cat, or a clone() you change) instead"),
    ("a leaf Variable that requires grad is being used in an in-place operation",
     "an in-place update (W -= …, W.sub_(…)) of a tensor that requires grad: autograd forbids it on a leaf. Return "
     "new tensors instead (W - lr * gW), leaving the caller's W as it is"),
    ("modified by an inplace operation",
     "a tensor autograd saved for the backward pass (to compute a derivative) was changed in place after it was "
     "saved (+=, mul_, x[i] = …, a ReLU(inplace=True)): the backward needs the value it had. Make that change out of "
     "place (x = x * 2, not x.mul_(2)), or change a clone()"),
    ("does not require grad and does not have a grad_fn",
     "autograd was asked for a gradient of something with no graph: make the input a leaf that requires grad "
     "first (x = x.detach().requires_grad_(True)), and do not cut what the gradient must flow through (.data, "
     ".detach(), .item(), torch.no_grad(), torch.tensor(…) of a tensor)"),
    ("appears to not have been used in the graph",
     "a tensor you ask the gradient for is not in the graph of what you differentiate: the output was computed "
     "from another tensor (a copy made with .data, .detach() or .clone(), or a name rebound after requires_grad_)"),
    ("Trying to backward through the graph a second time",
     "the graph is freed after the first backward/autograd.grad: pass retain_graph=True to every call but the "
     "last, or rebuild the graph (call f again) before each"),
    ("grad can be implicitly created only for scalar outputs",
     ".backward() with no argument needs a 0-dim tensor: reduce the loss to one number as the formula says, or pass "
     "the upstream gradient (y.backward(v), autograd.grad(y, x, grad_outputs=v))"),
    ("must match the size of tensor", _sizes),
    ("cannot be multiplied", _matmul),
    ("size mismatch, got input", _matmul),
    ("Mismatch in shape: grad_output",
     "grad_outputs must have the shape of the output it weighs (f(x)'s shape), not the input's"),
    ("to have the same dtype", _dtypes),
    ("must have the same dtype", _dtypes),
    ("to have same dtype", _dtypes),
    ("expected scalar type", _dtypes),
    ("requires the source and destination dtypes match", _dtypes),
    ("expected target dtype to be Long",
     "F.cross_entropy's target is class numbers of dtype int64 (y.long(), or y.argmax(dim=1) from one-hot rows), or "
     "class probabilities of the input's dtype and shape"),
    ("tensors used as indices must be long",
     "an index tensor of floats: indices must be integers (int64: .long()) or booleans"),
    ("Found no NVIDIA driver",
     "your code moves a tensor to a GPU (.cuda(), device='cuda'): the check runs on the CPU; keep every tensor on "
     "the device it arrives on (torch.zeros(…, device=x.device))"),
    ("is not on the expected device",
     "tensors on two devices met in one operation: create your tensors on the device of the inputs "
     "(device=x.device)"),
    ("Can't call numpy() on Tensor that requires grad",
     "NumPy of a tensor in the graph: autograd cannot follow a computation through NumPy. Keep it in torch "
     "operations"),
    ("Boolean value of Tensor with more than one value is ambiguous",
     "if, while, and, or or Python's max() on a tensor of several numbers: use elementwise torch operations "
     "(torch.where, torch.maximum, torch.clamp) or reduce first (.any(), .all())"),
    ("only one element tensors can be converted to Python scalars",
     "float() or a Python number of a tensor holding several numbers: keep it a tensor (or reduce it first)"),
    ("cannot be converted to Scalar",
     ".item() of a tensor holding several numbers: keep it a tensor (or reduce it first)"),
    ("is invalid for input of size",
     "a reshape or view to a shape that does not hold the tensor's number of elements: compare the sizes"),
    ("Dimension out of range",
     "a dim= past the tensor's dimensions (the tensors on your line are listed after it, with their shapes)"),
    ("out of bounds", _bounds),
    ("could not infer output dtype",
     "a mean (or another floating operation) of an integer tensor: convert it to the inputs' floating dtype first "
     "(.to(x.dtype))"),
    ("can't be cast to the desired output type",
     "an in-place operation writes floats into an integer tensor: compute a new tensor (out of place), or convert "
     "to a floating dtype first"),
    ("stack expects each tensor to be equal size",
     "torch.stack of tensors of different shapes: each must have the same shape (torch.cat joins along an existing "
     "dimension)"),
    ("stack expects a non-empty TensorList",
     "torch.stack of an empty list: the loop that fills it never ran on this input (its range is empty here: "
     "compare it with the sizes of this input; a range that stops one short, range(n - 1) or range(1, n), is empty "
     "where n = 1)"),
    ("1D tensors expected", "torch.dot takes two 1-D tensors: use @ (torch.matmul) for matrices"),
    ("attempting to assign a gradient",
     "p.grad = g with g of another shape or dtype than p: give each parameter the gradient of its own shape and "
     "dtype, in the order of its parameters()"),
    ("returned an incorrect number of gradients",
     "backward returns one gradient per input of forward (after ctx), in the same order: None for an input that "
     "needs none"),
    ("returned an invalid gradient",
     "a gradient backward returns has the wrong shape: each must have the shape of its input to forward (dy times "
     "the local derivative, elementwise, keeps it)"),
    ("save_for_backward can only save variables",
     "ctx.save_for_backward takes tensors only: keep a number on ctx as an attribute (ctx.k = k)"),
    ("you can only change requires_grad flags of leaf variables",
     "requires_grad_ on a computed tensor: call it on the input first (x = x.detach().requires_grad_(True)), then "
     "compute from x"),
    ("only Tensors of floating point dtype can require gradients",
     "requires_grad on an integer tensor: gradients exist for floating dtypes only; convert first (.to(x.dtype))"),
]


def explain_error(checks: Checks, error: str) -> str:
    """The fix for an exception the submission raised, when its message is one students meet: the exercise's own
    advice first, then the general one (from the message's measured sizes and dtypes and the student's line)."""
    for pattern, fix in [*checks.errors, *ERRORS]:
        if pattern in error:
            return fix(error) if callable(fix) else fix
    return ""
