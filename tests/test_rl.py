"""The RL plumbing dqn and actor-critic share: greedy evaluation, the best checkpoint, window statistics."""

import math

import numpy as np
import torch

from gradlab.kit import rl


def sequential_returns(policy, episodes: int, seed: int) -> list[float]:
    """The obvious one-episode-at-a-time loop, as a reference for the lockstep evaluation."""
    out = []
    for k in range(episodes):
        env = rl.make_env()
        s, _ = env.reset(seed=seed + k)
        total, done = 0.0, False
        while not done:
            with torch.no_grad():
                a = int(policy(torch.from_numpy(s)[None]).argmax(dim=1))
            s, r, terminated, truncated, _ = env.step(a)
            total += r
            done = terminated or truncated
        out.append(total)
    return out


def test_lockstep_evaluation_equals_one_episode_at_a_time():
    torch.manual_seed(0)
    policy = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    returns = rl.evaluate(policy, 4, seed=3)
    assert returns == sequential_returns(policy, 4, seed=3)
    assert all(1 <= r <= 500 for r in returns)


class Constant(torch.nn.Module):
    """Always prefers one action; CartPole falls over within a few dozen steps."""

    def __init__(self, action: int, tag: float = 0.0):
        super().__init__()
        self.action, self.tag = action, torch.nn.Parameter(torch.tensor(tag))

    def forward(self, s):
        return torch.nn.functional.one_hot(torch.full((len(s),), self.action), 2).float()


def test_checkpoint_due_crosses_every_multiple_and_the_end():
    c = rl.BestCheckpoint(every=10, episodes=1, seed=0)
    assert [s for s in range(1, 26) if c.due(s, 25)] == [10, 20, 25]
    assert [s for s in range(8, 41, 8) if c.due(s, 40, stride=8)] == [16, 24, 32, 40]  # 10, 20, 30, 40 crossed


def test_best_checkpoint_keeps_a_copy_of_the_best_and_ties_go_to_the_later():
    c = rl.BestCheckpoint(every=1, episodes=2, seed=0)
    left, right = Constant(0, tag=1.0), Constant(1, tag=2.0)
    scores = {a: float(np.mean(rl.evaluate(Constant(a), 2, rl.CHECKPOINT_SEEDS))) for a in (0, 1)}
    c.offer(1, left)
    c.offer(2, right)
    c.offer(3, left)
    assert [s for _, s in c.history] == [scores[0], scores[1], scores[0]]
    assert c.best_step == (3 if scores[0] >= scores[1] else 2) and c.best_return == max(scores.values())
    with torch.no_grad():
        left.tag.fill_(-5.0)  # the kept policy is a copy, not the live network
    assert float(c.best.tag.detach()) in (1.0, 2.0)


def test_window_means():
    assert rl.window_means([(10, 1.0), (20, 3.0), (90, 5.0)], 100, 2) == [2.0, 5.0]
    assert math.isnan(rl.window_means([(10, 1.0)], 100, 2)[1])  # no episode ended in the second window
    assert [rl.window_label(lo, hi) for lo, hi in rl.window_edges(100, 2)] == ["1–50", "51–100"]


def test_a_collapse_after_the_best_checkpoint_is_named_in_the_table_and_a_note():
    assert rl.after_best(332.3, 70.2) == "collapsed" and rl.after_best(332.3, 300.0) == "held"
    assert rl.after_best(float("nan"), 10.0) == ""
    note = rl.collapse_note("stop-grad", 2000, 332.3, 70.2, 3000)
    assert len(note) == 1 and "last policy (step 3,000) scores 70.2" in note[0] and "best (step 2,000)" in note[0]
    assert rl.collapse_note("stop-grad", 2000, 332.3, 300.0, 3000) == []


def test_the_learning_mark_is_cartpole_v0s_solved_threshold_and_the_note_names_v1s():
    """195 is v0's registered threshold (200-step episodes), not v1's (475, 500 steps): the note says both."""
    assert rl.registered("CartPole-v0") == (200, 195.0) and rl.registered(rl.ENV_ID) == (500, 475.0)
    assert rl.registered("CartPole-v0")[1] == rl.LEARNED
    note = rl.env_note()
    assert "cut at 500 steps, and gymnasium registers its 'solved' threshold as 475" in note
    assert "claims use CartPole-v0's, 195 (for 200-step episodes)" in note


def test_cartpole_transitions_are_deterministic():
    """The same state and action give the same next state and reward, whatever the environment's seed: only reset()
    draws random numbers. (dqn's docstring rests on it: the squared TD error's expectation is then the squared
    Bellman error.)"""
    a, b = rl.make_env(), rl.make_env()
    a.reset(seed=1)
    b.reset(seed=2)
    rng = np.random.default_rng(0)
    for _ in range(50):
        action = int(rng.integers(2))
        b.unwrapped.state = a.unwrapped.state.copy()
        out_a, out_b = a.step(action), b.step(action)
        assert np.array_equal(out_a[0], out_b[0]) and out_a[1:3] == out_b[1:3]
        if out_a[2] or out_a[3]:
            a.reset(seed=3)
            b.reset(seed=4)
    a.close()
    b.close()


def test_one_linear_schedule_is_the_anneal_and_the_epsilon_the_lessons_wrote_by_hand():
    """gradlab.kit.schedule.linear replaced dqn's and actor-critic's anneals written out by hand: the same numbers,
    bit for bit (the runs repeat to the last digit)."""
    from gradlab.kit.schedule import linear

    for lr, total in ((2.3e-3, 30_000), (2e-3, 150_000), (0.1, 7)):
        for step in [*range(0, total + 1, max(1, total // 97)), total]:
            assert linear(lr, 0, step, total) == lr * (1 - step / total)
    span = int(0.16 * 30_000)
    for step in (0, 1, 2400, span, span + 1, 30_000):
        assert linear(1.0, 0.04, step, span) == 0.04 + (1.0 - 0.04) * max(0.0, 1 - step / span)
    assert linear(1.0, 0.04, 10 * span, span) == 0.04  # flat after the span
