# gradlab-exercise: jacobian.jacobian_loop
# corpus: wrong
# mistake: torch.func.jacrev instead of the loop of vector-Jacobian products the exercise asks for (a failed check of its own); the values are right.
# relation: the values are right; the check 'uses none of … torch.func.jacrev' fails, naming the call
import torch
import torch.nn.functional as F


def jacobian_loop(f, x):
    return torch.func.jacrev(f)(x)
