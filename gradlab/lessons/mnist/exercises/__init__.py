"""What students write in `gradlab mnist`: each exercise's text (torch-free: `gradlab exercises` reads it). How a
submission is called is harness.py; its reference, known mistakes and claims are checks.py; model answers are
answers.py."""

from gradlab.practice.exercise import Exercise

EXERCISES = [
    Exercise(
        "sgd_step", 1,
        "one SGD step of softmax regression with torch.autograd.grad, then W -= lr·g",
        "def sgd_step(W, b, x, y, lr):",
        """One gradient-descent step of softmax regression, by hand.

        z = x W + b;  cost = mean_i(−Σ_k y_ik log softmax(z)_ik)   (the mean over the batch)
        gW, gb = ∂cost/∂W, ∂cost/∂b                              with torch.autograd.grad
        return W − lr·gW, b − lr·gb                               new tensors; W and b are not changed

        Shapes: W (784, 10), b (10,), x (B, 784), y (B, 10) one-hot, lr a float. W and b arrive with
        requires_grad=True. TF-1: grad_W, grad_b = tf.gradients(cost, [W, b]); W.assign(W - lr * grad_W).""",
        forbidden=("torch.optim.Optimizer",)),
    Exercise(
        "softmax_grad", 2,
        "the gradient of softmax regression derived by hand, xᵀ(p − y)/B: no autograd at all",
        "def softmax_grad(W, b, x, y):",
        """∂cost/∂W and ∂cost/∂b of softmax regression, from the formulas, without autograd.

        p = softmax(x W + b);  cost = mean_i(−Σ_k y_ik log p_ik)
        ∂cost/∂z = (p − y)/B,  ∂cost/∂W = xᵀ (p − y)/B,  ∂cost/∂b = mean_i (p − y)

        Shapes: W (784, 10), b (10,), x (B, 784), y (B, 10) one-hot. Return (gW, gb) of shapes (784, 10), (10,).
        TF-1: what tf.gradients(cost, [W, b]) computes for you.""",
        forbidden=("torch.autograd.grad", "torch.autograd.backward", "torch.Tensor.backward", "torch.func.grad",
                   "torch.func.vjp", "torch.autograd.functional.vjp", "torch.autograd.functional.jacobian")),
]
