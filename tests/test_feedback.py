"""Feedback that never misleads (#45): a cause is said only when a measurement confirms it, and an exception is
answered with plain advice and the student's line (its tensors measured). Judged in this process
(tests/inprocess.py), as the sandbox's child reports an answer."""

import pytest
from inprocess import judged
from test_diagnosis import fn_of, said

# (exercise, what the student did, their code, phrases the answer must contain, phrases it must not)
ANSWERS = [
    ("jacobian.jacobian_loop", "a forward difference in float64 code", """
        def jacobian_loop(f, x):
            cols = []
            for j in range(len(x)):
                e = torch.zeros_like(x)
                e[j] = 1e-6
                cols.append((f(x + e) - f(x)) / 1e-6)
            return torch.stack(cols, dim=1)
        """, ["not float32's rounding", "an approximation (a finite difference"], ["float32 precision"]),
    ("actor-critic.critic_update", "optimizer.step() never called", """
        def critic_update(critic, optimizer, s, r, s2, done, gamma):
            with torch.no_grad():
                target = r + gamma * (1 - done) * critic(s2).squeeze(1)
            loss = ((target - critic(s).squeeze(1)) ** 2).mean()
            for p, g in zip(critic.parameters(), torch.autograd.grad(loss, list(critic.parameters()))):
                p.grad = g
        """, ["optimizer.step() was never called in update 1"], [".grad was empty", "every .grad empty"]),
    ("actor-critic.critic_update", "zero_grad after the gradients were set", """
        def critic_update(critic, optimizer, s, r, s2, done, gamma):
            with torch.no_grad():
                target = r + gamma * (1 - done) * critic(s2).squeeze(1)
            loss = ((target - critic(s).squeeze(1)) ** 2).mean()
            for p, g in zip(critic.parameters(), torch.autograd.grad(loss, list(critic.parameters()))):
                p.grad = g
            optimizer.zero_grad()
            optimizer.step()
        """, ["with every .grad empty (None or zero, measured when it ran)"], ["never called"]),
    ("ddp.accumulated_grad", "the loop one part short", """
        def accumulated_grad(model, x, y, sizes):
            model.zero_grad()
            xs, ys = x.split(sizes), y.split(sizes)
            for k in range(len(sizes) - 1):
                (F.cross_entropy(model(xs[k]), ys[k], reduction="sum") / x.shape[0]).backward()
            return [p.grad for p in model.parameters()]
        """, ["every one None: no backward filled any .grad on this input, one part", "stops one short"], []),
    ("actor-critic.critic_update", "the prediction V(s) detached", """
        def critic_update(critic, optimizer, s, r, s2, done, gamma):
            with torch.no_grad():
                target = r + gamma * (1 - done) * critic(s2).squeeze(1)
            v = critic(s).squeeze(1).detach().requires_grad_()
            loss = ((target - v) ** 2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        """, ["the prediction itself, V(s) or Q(s, a), detached"], ["compute the target under", "never called"]),
    ("actor-critic.actor_loss", "the advantages normalised", """
        def actor_loss(actor, critic, s, a, r, s2, done, gamma):
            with torch.no_grad():
                delta = r + gamma * (1 - done) * critic(s2).squeeze(1) - critic(s).squeeze(1)
                delta = (delta - delta.mean()) / (delta.std() + 1e-8)
            log_pi = torch.log_softmax(actor(s), dim=1).gather(1, a.unsqueeze(1)).squeeze(1)
            return -(log_pi * delta).mean()
        """, ["= the loss with δ normalised over the batch", "your line 8: delta = (delta - delta.mean())",
              "std made the first NaN"], ["a sum where the mean belongs", "broadcast"]),
    ("mnist.sgd_step", "a float64 cast in float32 code", """
        def sgd_step(W, b, x, y, lr):
            z = x.double() @ W + b
            cost = -(y * F.log_softmax(z, dim=1)).sum(1).mean()
            gW, gb = torch.autograd.grad(cost, [W, b])
            return W - lr * gW, b - lr * gb
        """, ["(line 6: z = x.double() @ W + b)", "x (100, 784) float32, W (784, 10) float32 requiring grad",
              "two tensors of different dtypes (double and float)"], []),
    ("dqn.td_loss", "a tensor autograd saved, changed in place", """
        def td_loss(online, target, s, a, r, s2, done, gamma):
            with torch.no_grad():
                y = r + gamma * (1 - done) * target(s2).max(1).values
            q = online(s).gather(1, a[:, None]).squeeze(1)
            h = torch.sigmoid(q)
            h.mul_(1)
            return F.smooth_l1_loss(q + 0 * h, y)
        """, ["in the backward of your line 9: h = torch.sigmoid(q)", "was changed in place after it was saved"],
     []),
    ("mnist.softmax_grad", "a broadcast of (B, 10) against (B,) without keepdim", """
        def softmax_grad(W, b, x, y):
            z = x @ W + b
            e = torch.exp(z - z.max(dim=1, keepdim=True).values)
            p = e / e.sum(dim=1)
            return x.T @ (p - y) / len(x), (p - y).mean(0)
        """, ["(line 8: p = e / e.sum(dim=1))", "without keepdim=True"], []),
    ("mnist.softmax_grad", "a broadcast mistake that is not a missing keepdim", """
        def softmax_grad(W, b, x, y):
            p = torch.softmax(x @ W + b, dim=1)
            d = p - y.T
            return x.T @ d / len(x), d.mean(0)
        """, ["p (100, 10) float32, y (100, 10) float32", "compare each with the shapes the starter gives"],
     ["keepdim"]),
    ("jacobian.vjp", "a backward of a non-scalar", """
        def vjp(f, x, v):
            x = x.detach().requires_grad_(True)
            f(x).backward()
            return x.grad * v.sum()
        """, ["(line 7: f(x).backward())", ".backward() with no argument needs a 0-dim tensor"], []),
    ("jacobian.vjp", "a matrix product in the wrong order", """
        def vjp(f, x, v):
            x = x.detach().requires_grad_(True)
            J = torch.stack([torch.autograd.grad(f(x)[i], x)[0] for i in range(len(v))])
            return J @ v
        """, ["the matrix has 4 columns, the vector 3 entries", "the matrix transposed, (4×3), would fit"], []),
    ("gaussian-policy.GaussianLogProb", "backward returns too few gradients", """
        class GaussianLogProb(torch.autograd.Function):
            @staticmethod
            def forward(ctx, a, mu, sigma):
                ctx.save_for_backward(a, mu, sigma)
                return -(a - mu) ** 2 / (2 * sigma ** 2) - torch.log(sigma) - 0.5 * math.log(2 * math.pi)

            @staticmethod
            def backward(ctx, dy):
                a, mu, sigma = ctx.saved_tensors
                return dy * (a - mu) / sigma ** 2, dy * ((a - mu) ** 2 - sigma ** 2) / sigma ** 3
        """, ["backward returns one gradient per input of forward"], []),
]


@pytest.mark.parametrize(("name", "what", "source", "says", "never"), ANSWERS, ids=[f"{a[0]}: {a[1]}" for a in ANSWERS])
def test_each_answer_is_told_what_was_measured_and_never_a_guess(name, what, source, says, never):
    r = judged(name, fn_of(name, source))
    text = said(r)
    assert r.exit_code == 1, text
    for phrase in says:
        assert phrase in text, (phrase, text)
    for phrase in never:
        assert phrase not in text, (phrase, text)
