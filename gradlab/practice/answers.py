"""Model answers, as source, one per exercise: what the notebooks' "Your turn" cells become when the test suite runs
them (GRADLAB_NOTEBOOK_ANSWERS=1), and what a teacher can hand out afterwards. The suite checks every one of them
through `gradlab check`, the same way a student's answer is checked."""

ANSWERS = {
    "mnist.sgd_step": '''
def sgd_step(W, b, x, y, lr):
    cost = -(y * F.log_softmax(x @ W + b, dim=1)).sum(dim=1).mean()
    gW, gb = torch.autograd.grad(cost, [W, b])
    return W - lr * gW, b - lr * gb
''',
    "mnist.softmax_grad": '''
def softmax_grad(W, b, x, y):
    d = (torch.softmax(x @ W + b, dim=1) - y) / len(x)  # ∂cost/∂z = (p − y)/B
    return x.T @ d, d.sum(dim=0)
''',
    "clip.clip_by_global_norm": '''
def clip_by_global_norm(grads, clip_norm):
    norm = torch.sqrt(sum((g.double() ** 2).sum() for g in grads))  # float64: a sum of many squares
    scale = clip_norm / torch.clamp(norm, min=clip_norm)
    return [g * scale.to(g.dtype) for g in grads]
''',
    "jacobian.jacobian_loop": '''
def jacobian_loop(f, x):
    x = x.detach().requires_grad_(True)
    y = f(x)
    rows = [torch.autograd.grad(y[i], x, retain_graph=True)[0] for i in range(len(y))]
    return torch.stack(rows)
''',
    "log1pexp.Log1pExp": '''
class Log1pExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.clamp(x, min=0) + torch.log1p(torch.exp(-x.abs()))

    @staticmethod
    def backward(ctx, dy):
        x, = ctx.saved_tensors
        return dy * torch.sigmoid(x)
''',
    "gaussian-policy.score": '''
def score(a, mu, sigma):
    return (a - mu) / sigma**2, ((a - mu) ** 2 - sigma**2) / sigma**3
''',
    "dqn.td_loss": '''
def td_loss(online, target, s, a, r, s2, done, gamma):
    with torch.no_grad():
        y = r + gamma * (1 - done) * target(s2).max(dim=1).values
    q = online(s).gather(1, a.unsqueeze(1)).squeeze(1)
    return F.smooth_l1_loss(q, y)
''',
    "actor-critic.critic_update": '''
def critic_update(critic, optimizer, s, r, s2, done, gamma):
    with torch.no_grad():
        target = r + gamma * (1 - done) * critic(s2).squeeze(1)
    loss = ((target - critic(s).squeeze(1)) ** 2).mean()
    grads = torch.autograd.grad(loss, list(critic.parameters()))
    for p, g in zip(critic.parameters(), grads):
        p.grad = g
    optimizer.step()
''',
    "ddp.accumulated_grad": '''
def accumulated_grad(model, x, y, sizes):
    model.zero_grad()
    for xk, yk in zip(x.split(sizes), y.split(sizes)):
        (F.cross_entropy(model(xk), yk, reduction="sum") / len(x)).backward()
    return [p.grad for p in model.parameters()]
''',
    "ddp.average_gradients": '''
def average_gradients(grads, n_local, n_total):
    import torch.distributed as dist

    out = [g * (n_local / n_total) for g in grads]
    for t in out:
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return out
''',
}
