"""What students write in `gradlab jacobian`: each exercise's text and what its checks claim (torch-free: `gradlab
exercises` and the pre-flight of `gradlab check` read it). How a submission is called is harness.py; its reference,
known mistakes and what the diagnosis measures are checks.py; model answers are answers.py.

TF-1's tf.gradients(ys, xs, grad_ys=None) weighs the outputs with ones when grad_ys is None: "grad_ys is a list of
tensors of the same length as ys that holds the initial gradients for each y in ys. When grad_ys is None, we fill in
a tensor of '1's of the shape of y for each y in ys." (tensorflow/python/ops/gradients_impl.py, v1.15.0); TF-1's
tf.hessians differentiates tf.gradients's output again (same file, v1.15.0, lines 372 and 388)."""

from gradlab.kit.exercise import Exercise

EXERCISES = [
    Exercise(
        function="vjp", level=1,
        what="a vector-Jacobian product vᵀJ with one autograd.grad call: what tf.gradients(ys, xs, grad_ys) computes",
        signature="def vjp(f, x, v):",
        doc="""vᵀJ = Σ_i v_i ∂f_i/∂x, one backward pass: torch.autograd.grad(f(x), x, grad_outputs=v). The full
        Jacobian J (m × n) is never built. tf.gradients(ys, xs) computed this with v = ones (grad_ys=None).

        Shapes: f maps a tensor of shape (n,) to one of shape (m,); x (n,) float64, arriving without
        requires_grad; v (m,). Return vᵀJ, of shape (n,). torch.autograd.functional.vjp computes this (the check
        compares yours with it): write it yourself, one backward pass (torch.autograd.grad). The check counts
        the backward passes through f(x) (each autograd.grad or .backward call one, a batched call m): one.""",
        claims={"vjp": ("your vᵀJ ≡ torch.autograd.functional.vjp's (largest |yours − expected| ÷ max(1, largest "
                        "|expected|), tensor by tensor)", 1e-9)},
        rules=(("one backward pass: passes through f(x) (max over the inputs; a batched call counts m)", 1.0,
                "<="),),
        forbidden=("torch.autograd.functional.vjp", "torch.func.vjp", "torch.autograd.functional.jacobian",
                   "torch.func.jacrev", "torch.func.jacfwd", "torch.func.vmap", "torch.vmap")),
    Exercise(
        function="jacobian_loop", level=2,
        what="the full Jacobian of f at x by a loop of vector-Jacobian products, one row per output",
        signature="def jacobian_loop(f, x):",
        doc="""J[i, j] = ∂f_i/∂x_j, one row per output: row i = autograd.grad(f(x)[i], x) (a vector-Jacobian product
        with the unit vector e_i). tf.gradients(f(x), x) returned Σ_i ∂f_i/∂x: the rows summed.

        Shapes: f maps a tensor of shape (n,) to one of shape (m,); x (n,). Return J of shape (m, n).""",
        claims={"jacobian": ("your Jacobian ≡ torch.autograd.functional.jacobian's (largest |yours − expected| ÷ "
                             "max(1, largest |expected|), tensor by tensor)", 1e-9)},
        forbidden=("torch.autograd.functional.jacobian", "torch.func.jacrev", "torch.func.jacfwd")),
    Exercise(
        function="hvp", level=3,
        what="a Hessian-vector product H v by double backward",
        signature="def hvp(f, x, v):",
        doc="""H v = ∂/∂x ⟨∇f(x), v⟩ for a scalar f: differentiate the gradient a second time, along v.

        g = autograd.grad(f(x), x, create_graph=True)[0]   the gradient, with a graph of its own
        H v = autograd.grad(g, x, grad_outputs=v)[0]        its vector-Jacobian product with v (H is symmetric)

        Shapes: f maps x (n,) float64 to a 0-dim tensor; x arrives without requires_grad; v (n,). Return H v of
        shape (n,). torch.autograd.functional.hvp computes this (the check compares yours with it, and calling
        it, vhp, a library Hessian or Jacobian, or vmap fails a check of its own): differentiate twice yourself,
        with torch.autograd.grad. H is never built: the check counts the backward passes through the gradient
        (each autograd.grad or .backward call one, a batched call n), and H v takes one. TF-1: tf.hessians(ys,
        xs) built the whole Hessian by differentiating tf.gradients's output again; H v needs one backward pass
        more than the gradient.""",
        claims={"hvp": ("your H v ≡ torch.autograd.functional.hvp's (largest |yours − expected| ÷ max(1, largest "
                        "|expected|), tensor by tensor)", 1e-9)},
        rules=(("H is never built: backward passes through the gradient ∇f (max over the inputs; a batched call "
                "counts n)", 1.0, "<="),),
        forbidden=("torch.autograd.functional.hvp", "torch.autograd.functional.vhp",
                   "torch.autograd.functional.hessian", "torch.func.hessian", "torch.autograd.functional.jacobian",
                   "torch.func.jacrev", "torch.func.jacfwd", "torch.func.vmap", "torch.vmap")),
]
