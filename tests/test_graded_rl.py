"""The teacher kit's graded variants of the RL lessons and ddp (teacher/graded/: gaussian_policy_graded, dqn_graded,
actor_critic_graded, ddp_graded; issue #34): exercises whose answer is in no student's gradlab. For each one: the
model answer passes (on several seeds), every known mistake fails with its own diagnosis, the untouched starter fails
in the real check, and nothing a student has passes: the base exercise's model answer and the lesson's own code for
that skill, adapted to the variant's signature, fail on every seed."""

import importlib
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from conftest import check_file
from test_practice import perturb

from gradlab.kit.harness import Returned
from gradlab.practice import all_exercises, answer, checks_of
from gradlab.practice.classroom import course, own
from gradlab.practice.classroom.starter import starter
from gradlab.practice.judging.judge import Reference, judge
from gradlab.practice.sandbox.returned import Received

KIT = Path(__file__).resolve().parent.parent / "teacher" / "graded"
VARIANTS = {"gaussian_policy_graded.score": "gaussian-policy.score", "dqn_graded.td_loss": "dqn.td_loss",
            "actor_critic_graded.critic_update": "actor-critic.critic_update",
            "ddp_graded.accumulate": "ddp.accumulated_grad"}
SEEDS = (0, 1, 2, 3, 4)


@pytest.fixture(scope="module", autouse=True)
def loaded():
    """The four folders loaded as a course loads them (gradlab.practice.classroom.own); all_exercises() as it was,
    afterwards."""
    before = dict(all_exercises())
    for name in VARIANTS:
        own.load(KIT / name.split(".")[0], "tests/test_graded_rl.py")
    yield
    all_exercises().clear()
    all_exercises().update(before)
    for module in [m for m in sys.modules if m.startswith("gradlab_own_")]:
        del sys.modules[module]


def judged(name: str, fn, seed: int = 0):
    """The Result for FN as if it had run in the sandbox (its outputs through the exercise's harness)."""
    checks = checks_of(all_exercises()[name])
    cases = checks.cases(seed)
    return judge(all_exercises()[name], Reference(checks, cases, [checks.run(None, c) for c in cases]),
                 Received(ok=True, outputs=[checks.call(fn, c) for c in cases]), seed)


def mistakes() -> list[tuple[str, str]]:
    """(exercise, mistake) for every known mistake, read at collection from the folders' checks.py (imported as a
    course imports them, without adding the exercises to gradlab's: other test modules list those)."""
    out = []
    for name in VARIANTS:
        lesson, function = name.split(".")
        package = own.package_of(lesson)
        own._import(KIT / lesson, package, "tests/test_graded_rl.py")
        out += [(name, m.name) for m in importlib.import_module(f"{package}.checks").CHECKS[function].mistakes]
    return out


@pytest.mark.parametrize("name", VARIANTS)
@pytest.mark.parametrize("seed", SEEDS)
def test_the_model_answer_passes(name, seed):
    r = judged(name, answer(all_exercises()[name]), seed)
    assert r.exit_code == 0 and "diagnosis" not in r.metrics, [(c.text, c.value) for c in r.claims]


@pytest.mark.parametrize(("name", "mistake"), mistakes())
def test_every_known_mistake_fails_with_its_own_diagnosis(name, mistake):
    """And scores nothing under a course's default scoring ("claims"): a graded exercise's wrong answer does not keep
    half the points for a property that holds beside it (none of these exercises has one: Exercise.rules)."""
    m = next(m for m in checks_of(all_exercises()[name]).mistakes if m.name == mistake)
    r = judged(name, m.fn)
    assert r.exit_code == 1 and r.metrics["diagnosis"].startswith(f"{mistake}: "), r.metrics.get("diagnosis")
    assert course.score(r, course.Item(file="f.py", exercise=name)).score == 0


@pytest.mark.parametrize("name", VARIANTS)
def test_a_small_perturbation_of_the_reference_fails_and_shows_where(name):
    """The reference's own outputs, each number moved by one part in a thousand: the checks can fail."""
    checks = checks_of(all_exercises()[name])
    cases = checks.cases(0)
    refs = [checks.run(None, c) for c in cases]
    r = judge(all_exercises()[name], Reference(checks, cases, refs),
              Received(ok=True, outputs=[perturb(o) for o in refs]))
    assert r.exit_code == 1 and "first difference" in r.metrics["diagnosis"], r.metrics.get("diagnosis")


def test_accumulating_with_one_forward_over_the_whole_batch_is_refused():
    """The whole batch through the model at once gives the right gradient, and is not accumulation: the harness says
    so on the first input whose parts are smaller than the batch (the one-part input allows it)."""
    checks = checks_of(all_exercises()["ddp_graded.accumulate"])

    def whole(model, x, y, sizes):
        model.zero_grad()
        F.cross_entropy(model(x), y).backward()
        return [p.grad for p in model.parameters()]

    for case in checks.cases(0):
        if len(case["sizes"]) == 1:
            checks.call(whole, case)
        else:
            with pytest.raises(Returned, match=f"ran on 40 samples at once, more than the largest part "
                                               f"\\({max(case['sizes'])}\\)"):
                checks.call(whole, case)


# ------------------------------------------------------------------ nothing a student has passes
def _base(name: str):
    return answer(all_exercises()[VARIANTS[name]])


def _students_gaussian() -> dict:
    """The base answer and the lesson's code (gradlab/lessons/gaussian_policy/lesson.py) for (ln π, ∂/∂μ, ∂/∂log σ):
    the plain Gaussian at a, its σ-derivative turned into log σ's by the chain rule."""
    from gradlab.lessons.gaussian_policy import lesson

    def at_a(scores, log_prob):
        def score(a, mu, log_std):
            d_mu, d_sigma = scores(a, mu, log_std.exp())
            return log_prob(a, mu, log_std.exp()), d_mu, log_std.exp() * d_sigma
        return score

    def normal(a, mu, s):
        return lesson.normal_log_prob(mu, s, a)

    return {"the base answer (score)": at_a(_base("gaussian_policy_graded.score"), normal),
            "the lesson's score_closed_form": at_a(lambda a, mu, s: lesson.score_closed_form(mu, s, a), normal),
            "the lesson's GaussianLogProb": at_a(lambda a, mu, s: lesson.score_closed_form(mu, s, a),
                                                 lambda a, mu, s: lesson.GaussianLogProb.apply(mu, s, a))}


def _students_dqn() -> dict:
    from gradlab.lessons.dqn import lesson

    def lesson_loss(mode):
        return lambda online, target, s, a, r, s2, done, gamma: lesson.td_loss(
            online, target, lesson.Batch(s, a, r, s2, done), gamma, mode)

    return {"the base answer (dqn.td_loss)": _base("dqn_graded.td_loss"),
            "the lesson's td_loss, stop-grad": lesson_loss("stop-grad"),
            "the lesson's td_loss, placeholder": lesson_loss("placeholder")}


def _students_critic() -> dict:
    """The base answer and the lesson's critic_loss, on the segment's transitions: each step's next state is the next
    row (s_last after the last), the one-step target."""
    from gradlab.lessons.actor_critic import lesson

    def flat(update):
        def critic_update(critic, optimizer, s, r, done, s_last, gamma):
            s2 = torch.cat([s[1:], s_last.unsqueeze(0)])
            update(critic, optimizer, s.reshape(-1, 4), r.reshape(-1), s2.reshape(-1, 4), done.reshape(-1), gamma)
        return critic_update

    def lesson_update(mode):
        def update(critic, optimizer, s, r, s2, done, gamma):
            with torch.no_grad():  # the lesson's td_target, as its train() computes it
                td_target = r + gamma * (1 - done) * critic(s2).squeeze(1)
            lesson.critic_update(critic, optimizer, s, td_target, mode)
        return update

    return {"the base answer (actor-critic.critic_update)": flat(_base("actor_critic_graded.critic_update")),
            **{f"the lesson's critic_update, {mode}": flat(lesson_update(mode)) for mode in ("explicit", "backward")}}


def _students_ddp() -> dict:
    """The base answer as it is (the same signature) and the lesson's accumulate (gradlab/lessons/ddp/single.py), its
    one-hot targets made with zero rows for the padding."""
    from gradlab.lessons.ddp import single

    def lesson_recipe(recipe):
        def accumulate(model, x, y, sizes):
            one_hot = F.one_hot(y.clamp(min=0), 5).double() * (y != -100).unsqueeze(1)
            model.zero_grad()
            single.accumulate(model, x, one_hot, sizes, recipe)
            return [p.grad for p in model.parameters()]
        return accumulate

    return {"the base answer (ddp.accumulated_grad)": _base("ddp_graded.accumulate"),
            **{f"the lesson's accumulate, {recipe}": lesson_recipe(recipe)
               for recipe in (single.SUM_B, single.MEAN_K, single.FORGOT_K)}}


STUDENTS = {"gaussian_policy_graded.score": _students_gaussian, "dqn_graded.td_loss": _students_dqn,
            "actor_critic_graded.critic_update": _students_critic, "ddp_graded.accumulate": _students_ddp}


@pytest.mark.parametrize("name", VARIANTS)
def test_nothing_a_student_has_passes(name):
    """What a student's gradlab holds for the skill, adapted to the variant's signature, fails on every seed tried;
    the same adaptation passes the base exercise (it is a faithful adaptation, not a broken one)."""
    for label, fn in STUDENTS[name]().items():
        for seed in SEEDS:
            r = judged(name, fn, seed)
            assert r.exit_code == 1, (label, seed)


def test_the_adapted_lesson_code_is_right_where_the_variant_meets_its_base():
    """Where the variant reduces to its base (online = target; one step; no padding), the adapted code of a student's
    gradlab agrees with the variant's reference: the failures above are the variant's, not the adaptation's."""
    dqn = checks_of(all_exercises()["dqn_graded.td_loss"])
    synced = next(c for c in dqn.cases(0) if c["label"].startswith("online = target"))
    for fn in _students_dqn().values():
        assert torch.allclose(dqn.call(fn, synced)["loss"], dqn.run(None, synced)["loss"], rtol=1e-12)
    critic = checks_of(all_exercises()["actor_critic_graded.critic_update"])
    one = next(c for c in critic.cases(0) if "one step" in c["label"])
    for fn in _students_critic().values():
        got, want = critic.call(fn, one), critic.run(None, one)
        assert all(torch.allclose(a, b, rtol=1e-9) for k in want if not k.startswith("_")  # "_steps": a count
                   for a, b in zip(got[k], want[k], strict=True))
    ddp = checks_of(all_exercises()["ddp_graded.accumulate"])
    plain = next(c for c in ddp.cases(0) if c["label"].endswith("no padding"))
    got, want = ddp.call(_students_ddp()["the base answer (ddp.accumulated_grad)"], plain), ddp.run(None, plain)
    assert all(torch.allclose(a, b, rtol=1e-9) for a, b in zip(got["grads"], want["grads"], strict=True))


# ------------------------------------------------------------------ the edge cases every seed has
@pytest.mark.parametrize("seed", range(20))
def test_the_forced_cases_are_there_on_every_seed(seed):
    """The cases that make the variant's answer differ from what a student has are placed, not drawn: online's ranking
    opposite to target's and an exact tie (Double DQN); a part of padding only (ddp); actions within 1e-6 of ±1
    (SAC's policy); a termination in the middle of a segment (the critic)."""
    dqn = {c["label"]: c for c in checks_of(all_exercises()["dqn_graded.td_loss"]).cases(seed)}
    qnet = importlib.import_module("gradlab_own_dqn_graded.harness").qnet

    opposite = next(c for k, c in dqn.items() if k.startswith("online ranks"))
    online, target = qnet(opposite["online"])(opposite["s2"]), qnet(opposite["target"])(opposite["s2"])
    assert torch.equal(online.argmax(1), target.argmin(1))
    tie = next(c for k, c in dqn.items() if "tie" in k)
    q = qnet(tie["online"])(tie["s2"])
    assert torch.equal(q[:, 0], q[:, 1])
    ddp = checks_of(all_exercises()["ddp_graded.accumulate"]).cases(seed)
    assert any((part == -100).all() for c in ddp for part in c["y"].split(c["sizes"]))
    gauss = checks_of(all_exercises()["gaussian_policy_graded.score"]).cases(seed)
    assert max(float(c["a"].abs().max()) for c in gauss) == 1 - 1e-6
    critic = checks_of(all_exercises()["actor_critic_graded.critic_update"]).cases(seed)
    assert any((c["done"][:, 1:-1] == 1).all(dim=-1).any() for c in critic)


def test_the_critics_optimizer_is_tf1s_centered_rmsprop():
    """The harness's optimizer, written out (harness.py runs in the sandbox, where gradlab.kit.optim is not), steps as
    gradlab.kit.optim.TFRMSprop(centered=True) does, itself checked against TF-1's kernel by the actor-critic lesson."""
    from gradlab.kit.optim import TFRMSprop

    centered = importlib.import_module("gradlab_own_actor_critic_graded.harness").CenteredRMSProp

    g = torch.Generator().manual_seed(0)
    start = torch.randn(5, 3, generator=g, dtype=torch.float64)
    ours, theirs = start.clone(), start.clone()
    ours.requires_grad_(True)
    theirs.requires_grad_(True)
    a, b = centered([ours]), TFRMSprop([theirs], lr=0.01, decay=0.9, momentum=0.9, epsilon=1e-10,
                                                centered=True)
    for _ in range(6):
        grad = torch.randn(5, 3, generator=g, dtype=torch.float64)
        ours.grad, theirs.grad = grad.clone(), grad.clone()
        a.step()
        b.step()
        assert torch.allclose(ours, theirs, rtol=0, atol=1e-15)
    assert (ours - start).abs().min() > 1e-4  # every coordinate moved: the comparison is not of two still tensors


# ------------------------------------------------------------------ the starter, and the answer in the real check
@pytest.mark.parametrize("name", VARIANTS)
def test_the_starter_runs_to_its_not_implemented_body(name):
    """The untouched starter (`gradlab exercise NAME --course …`): valid Python whose function the harness reaches with
    every input's arguments, and which fails there, as the check reports it ("raises NotImplementedError")."""
    exercise = all_exercises()[name]
    namespace: dict = {}
    exec(compile(starter(exercise), "starter.py", "exec"), namespace)
    checks = checks_of(exercise)
    for case in checks.cases(0):
        with pytest.raises(NotImplementedError, match=f"write {exercise.function}"):
            checks.call(namespace[exercise.function], case)


@pytest.mark.parametrize("name", VARIANTS)
def test_the_answer_passes_in_the_real_check(tmp_path, name):
    """The model answer as a student's file, through the sandbox (the harness of a teacher's folder bound there)."""
    from gradlab.practice import answer_source

    path = tmp_path / "s.py"
    path.write_text(f"# gradlab-exercise: {name}\nimport math\n\nimport torch\nimport torch.nn.functional as F\n\n\n"
                    + answer_source(all_exercises()[name]))
    r = check_file(path, name)
    assert r.exit_code == 0, [(c.text, c.value) for c in r.claims]


def test_a_teachers_harness_is_not_shown_as_the_students_code(tmp_path):
    """A refusal raised by a teacher's own harness (gradlab_own_*/harness.py in the sandbox) is said without the
    harness's line, which is not the student's: the student reads only what their code did."""
    path = tmp_path / "ddp_accumulate.py"
    path.write_text("import torch.nn.functional as F\n\n\ndef accumulate(model, x, y, sizes):\n    model.zero_grad()\n"
                    "    F.cross_entropy(model(x), y).backward()\n    return [p.grad for p in model.parameters()]\n")
    r = check_file(path, "ddp_graded.accumulate")
    assert r.exit_code == 1 and "ran on 40 samples at once" in r.stopped, r.stopped
    assert "(line" not in r.stopped and "raise Returned" not in r.metrics.get("trace", ""), (r.stopped, r.metrics)
