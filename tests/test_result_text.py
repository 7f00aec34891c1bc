"""A Result printed outside Jupyter (print(gradlab.check(...)) in a script or a console): a few lines, not the
dataclass's multi-kilobyte repr."""

from gradlab.kit.result import Claim, Column, Result, Table


def made(passed: bool) -> Result:
    return Result(lesson="check", title="mnist.softmax_grad: the gradient", seed=0,
                  metrics={"exercise": "mnist.softmax_grad", "diagnosis": "∂W's /B forgotten"} if not passed else {},
                  claims=[Claim("a", "yours ≡ autograd's", 0.0 if passed else 9.0, 1e-5), Claim("b", "no graph", 0, 0)],
                  tables=[Table("t", [Column(header="x")], [[float(i)] for i in range(5000)])])


def test_a_result_prints_as_its_claims_and_diagnosis():
    wrong, right = made(False), made(True)
    assert str(wrong).splitlines() == ["mnist.softmax_grad: the gradient", "  ✗ yours ≡ autograd's", "  ✓ no graph",
                                       "diagnosis: ∂W's /B forgotten", "1 of 2 claims failed"]
    assert str(right).splitlines()[-1] == "all 2 claims hold"
    assert repr(wrong) == "<Result check: 'mnist.softmax_grad: the gradient', 2 claims, 1 failed>"
    assert len(repr(wrong)) < 200 and len(str(wrong)) < 500  # the 5000-row table is not in it


def test_a_check_the_run_stopped_before_is_shown_as_not_reached_not_as_failed():
    stopped = Result(lesson="check", title="mnist.softmax_grad: the gradient", seed=0, metrics={},
                     stopped="syntax error at line 2",
                     claims=[Claim.not_reached("a", "yours ≡ autograd's", 1e-5), Claim.not_reached("b", "no graph", 0)])
    assert str(stopped).splitlines() == ["mnist.softmax_grad: the gradient", "  – yours ≡ autograd's (not reached)",
                                         "  – no graph (not reached)", "stopped: syntax error at line 2",
                                         "2 of 2 claims not reached: the run stopped before them"]
    assert stopped.exit_code == 1  # not reached is not passed
    mixed = made(False)
    mixed.claims.append(Claim.not_reached("c", "train", 1e-5))
    assert str(mixed).splitlines()[-1] == "1 of 3 claims failed, 1 not reached"
