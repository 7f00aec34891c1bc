"""--graph and gradlab.graph: the drawn backward graph of each lesson agrees with what the lesson measures, the page
opens offline in a real browser, and bad paths are one line and exit 2."""

import io
import os
import re

import pytest
import torch
from conftest import assert_one_line_error, invoke

import gradlab
from gradlab.kit import autograd_graph
from gradlab.lessons import LESSONS
from gradlab.report import graph as drawing
from gradlab.report import graph_svg
from gradlab.report.console import make_console


@pytest.fixture(scope="module")
def graphs():
    """Every lesson's graphs at its default settings, made once."""
    return {name: info.load().graphs(info.config()) for name, info in LESSONS.items()}


def by_title(graphs, fragment):
    return next(g for g in graphs if fragment in g.title)


def test_every_lesson_draws_a_graph(graphs):
    assert set(graphs) == set(LESSONS)
    for name, gs in graphs.items():
        assert gs and all(g.nodes and any(n.leaf for n in g.nodes) for g in gs), name


def test_the_gradients_shown_into_each_leaf_add_up_to_what_autograd_returned(graphs):
    """What the edges carry (the hooks' gradients) sums, per leaf, to the gradient torch.autograd.grad returned."""
    for name, gs in graphs.items():
        for g in gs:
            for leaf_id, want in g.leaf_grads.items():
                edges = g.incoming(g.nodes[leaf_id])
                got = sum(g.edge_grad(e) for e in edges)
                assert torch.allclose(got, want, equal_nan=True, rtol=1e-6, atol=0), (name, g.title, leaf_id)


def test_log1pexp_nan_is_born_in_exp_backward(graphs):
    from gradlab.lessons.log1pexp.lesson import CLAIM_X, chain

    naive = by_title(graphs["log1pexp"], "naive")
    first = naive.first_nonfinite
    links = chain("naive", CLAIM_X)  # the lesson's link-by-link table
    assert first is not None and first.name == "ExpBackward0"
    assert float(first.grad_in) == links["dy/de"] == 0.0 and torch.isnan(first.grads_out[0]).item()
    assert "0 × inf" in graph_svg.why_nonfinite(first)
    assert by_title(graphs["log1pexp"], "where guard").first_nonfinite.name == "ExpBackward0"
    assert by_title(graphs["log1pexp"], "stable").first_nonfinite is None


def test_dqn_graph_measures_what_the_anatomy_table_shows(graphs):
    """The red path's ‖∇‖ into the target network is the anatomy's, bit for bit; the cuts sit where td_loss cuts."""
    from gradlab.lessons.dqn import lesson as dqn

    config = LESSONS["dqn"].config()
    anatomy = dqn.anatomy(config)
    gs = dict(zip((name for name, _, _ in dqn.COMPARE), graphs["dqn"], strict=True))
    g = gs["no-stop-grad"]
    _, _, target_net = dqn.anatomy_networks(config, "no-stop-grad", True)
    grads = g.named_grads("target")
    flat = torch.cat([grads[n].flatten() for n, _ in target_net.named_parameters()])
    assert torch.equal(flat, anatomy["no-stop-grad"].target)
    assert g.forbidden["target"] == pytest.approx(float(anatomy["no-stop-grad"].target.norm()), rel=1e-6)
    assert any(e.forbidden for e in g.edges) and not g.cuts
    for name, why, line in (("stop-grad", "detach", "y = y.detach()"),
                            ("placeholder", "no_grad", "y = data.rewards + gamma"),
                            ("stop-grad, no target net", "detach", "y = y.detach()")):
        cuts = gs[name].cuts
        assert [c.why for _, c in cuts] == [why] and line in cuts[0][1].where, name
        assert not gs[name].forbidden and not any(e.forbidden for e in gs[name].edges), name
    assert float(anatomy["stop-grad"].target.norm()) == 0.0  # the anatomy agrees: nothing reaches the target


def test_actor_critic_cuts_keep_each_loss_in_its_network(graphs):
    critic, actor = graphs["actor-critic"]
    assert [c.why for _, c in critic.cuts] == ["no_grad"] and {n.group for n in critic.nodes if n.leaf} == {"critic"}
    assert [c.why for _, c in actor.cuts] == ["detach"] and {n.group for n in actor.nodes if n.leaf} == {"actor"}


def test_a_missing_cut_shows_the_forbidden_path_in_red():
    """The same actor loss without the detach: the critic is reached, in red, with its measured norm."""
    critic, actor = torch.nn.Linear(3, 1), torch.nn.Linear(3, 2)
    s = torch.randn(4, 3)
    td = 1.0 - critic(s).squeeze(1)
    loss = -(torch.log_softmax(actor(s), 1)[:, 0] * td).mean()
    g = gradlab.graph(loss, names={"actor": actor, "critic": critic}, forbidden=("critic",)).graphs[0]
    want = torch.autograd.grad(loss, list(critic.parameters()), retain_graph=True)
    assert g.forbidden["critic"] == pytest.approx(float(torch.sqrt(sum(w.pow(2).sum() for w in want))), rel=1e-6)
    assert any(e.forbidden for e in g.edges)


def test_gaussian_policy_graphs_give_the_lesson_scores(graphs):
    from gradlab.lessons.gaussian_policy.settings import parse_list

    config = LESSONS["gaussian-policy"].config()
    sigma = torch.tensor(parse_list(config.sigma, "--sigma"))
    layer, normal, attached = graphs["gaussian-policy"]
    for g in (layer, normal):
        assert torch.allclose(g.named_grads()["mu"], layer.named_grads()["mu"], rtol=1e-6)
    assert len(layer.nodes) < len(normal.nodes)  # the layer: one node with a closed-form backward
    assert torch.equal(attached.named_grads()["mu"], torch.zeros(2))  # the lesson's (0, −1/σ)
    assert torch.allclose(attached.named_grads()["sigma"], -1 / sigma)


def test_ddp_ranks_are_joined_by_the_all_reduce_into_the_full_batch(graphs):
    """One graph: every rank's graph, and under their leaves the all-reduce node, which receives every rank's
    gradient of every parameter and holds their sum, the full batch's gradient."""
    (g,) = graphs["ddp"]
    workers = LESSONS["ddp"].config().workers
    (reduce,) = [n for n in g.nodes if n.outside]
    leaves = [n for n in g.nodes if n.leaf]
    assert reduce.name == "all_reduce(SUM)" and {n.part for n in leaves} == {f"rank {r}" for r in range(workers)}
    assert sorted(g.nodes[e.src].id for e in g.incoming(reduce)) == sorted(n.id for n in leaves)
    from gradlab.lessons.ddp.batches import new_model

    names = [name for name, _ in new_model(LESSONS["ddp"].config(), torch.device("cpu")).named_parameters()]
    summed = torch.cat([sum(g.leaf_grads[n.id] for n in leaves if n.label == name).reshape(-1) for name in names])
    assert torch.equal(reduce.grad_in, summed)
    differs = float(re.search(r"differs by (\S+) \(max rel\)", "\n".join(reduce.facts)).group(1))
    assert differs < 1e-6
    assert "all_reduce(SUM)" in drawing.svg([g])


def test_jacobian_graph_sends_the_row_sum_of_the_jacobian(graphs):
    """Seeded with ones (as tf.gradients), what arrives at X is Σ_i ∂W_i/∂X: the lesson's Jacobian, summed."""
    from gradlab.lessons.jacobian.lesson import jacobian_loop, policy
    from gradlab.lessons.jacobian.settings import parse_matrix, parse_vector

    config = LESSONS["jacobian"].config()
    X = torch.tensor(parse_matrix(config.matrix), dtype=torch.float64)
    y = torch.tensor(parse_vector(config.state, "--state"), dtype=torch.float64)
    summed, row, _ = graphs["jacobian"]
    J = jacobian_loop(lambda X_: policy(X_, y), X)
    assert summed.seed == "ones" and row.seed == "1"
    assert torch.allclose(summed.named_grads()["X"], J.sum(0), atol=1e-12)
    assert torch.allclose(row.named_grads()["X"], J[0], atol=1e-12)  # one backward: one row


def test_jacobian_hessian_graph_is_a_grad_of_a_grad(graphs):
    from gradlab.lessons.jacobian.lesson import hessian_loop, policy
    from gradlab.lessons.jacobian.settings import parse_matrix, parse_vector

    config = LESSONS["jacobian"].config()
    X = torch.tensor(parse_matrix(config.matrix), dtype=torch.float64)
    y = torch.tensor(parse_vector(config.state, "--state"), dtype=torch.float64)
    H = hessian_loop(lambda X_: policy(X_, y)[config.output], X)
    g = graphs["jacobian"][2]
    # the first backward's own nodes, differentiated
    assert any(re.fullmatch(r"\w+Backward\w*Backward\d", n.name) for n in g.nodes)
    assert torch.allclose(g.named_grads()["X"], H.reshape(X.numel(), *X.shape)[0], atol=1e-12)


def test_clip_draws_the_clipping_as_a_node_under_the_leaves(graphs):
    """clip_by_global_norm receives every leaf's gradient, says their global norm and the scale; each leaf says its
    clipped gradient; the SVG has the node."""
    (g,) = graphs["clip"]
    config = LESSONS["clip"].config()
    norm = float(torch.sqrt(sum(t.double().pow(2).sum() for t in g.leaf_grads.values())))
    scale = config.clip_norm / max(norm, config.clip_norm)
    (clip,) = [n for n in g.nodes if n.outside]
    assert clip.name == "clip_by_global_norm" and len(g.incoming(clip)) == len(g.leaf_grads)
    assert f"global norm √(Σ‖∇‖²) = {norm:.6g}" in clip.facts[0] and f"= {scale:.6g}" in clip.facts[1]
    assert scale < 1  # the default clips: clipped and unclipped differ
    for i, grad in g.leaf_grads.items():
        assert f"clipped ∇ {autograd_graph.summary(grad * scale)}" in g.nodes[i].facts[0]
    assert ">clip_by_global_norm<" in drawing.svg([g]) and g.note.startswith("look at:")


def test_every_graph_says_what_to_look_at(graphs):
    for name, gs in graphs.items():
        for g in gs:
            assert g.note.startswith("look at: "), (name, g.title)


def test_the_docs_pictures_are_the_lessons_graphs(graphs):
    """docs/graphs/<lesson>.svg (`make docs`) draws the nodes a fresh drawing has: it fails when a lesson's key
    computation changed and the pictures were not redrawn."""
    from collections import Counter

    from conftest import REPO

    def node_names(text):
        return Counter(re.findall(r">(\w+Backward\w*|[\w.]+  \(AccumulateGrad\))<", text))

    for name, gs in graphs.items():
        for picture, fresh in ((REPO / "docs" / "graphs" / f"{name}.svg", drawing.svg(gs)),
                               (REPO / "docs" / "graphs" / f"{name}.html", drawing.page(gs, name))):
            assert picture.exists(), f"{picture} is missing: run `make docs`"
            assert node_names(picture.read_text()) == node_names(fresh), f"{name}: run `make docs`"
        text = (REPO / "docs" / "lessons" / f"{name}.md").read_text()
        assert f"(../graphs/{name}.svg)" in text and f'<iframe src="../graphs/{name}.html"' in text  # embedded


def test_graph_option_writes_svg_html_and_a_tree(tmp_path):
    page, picture = tmp_path / "g.html", tmp_path / "g.svg"
    for path in (page, picture):
        result = invoke("jacobian", "--graph", str(path))
        assert result.exit_code == 0 and f"wrote {path}" in result.output, result.output
    assert page.read_text().startswith("<!doctype html>") and "LogSoftmaxBackward0" in page.read_text()
    assert picture.read_text().startswith("<svg") and "MvBackward0" in picture.read_text()
    tree = invoke("log1pexp", "--graph", "-")
    assert tree.exit_code == 0
    assert re.search(r"ExpBackward0 .*NaN born here: ∇ 0 × inf", tree.output), tree.output


def test_graph_beside_json_on_standard_output_keeps_the_json_pure():
    import json

    result = invoke("log1pexp", "--x", "0", "--json", "-", "--graph", "-")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["lesson"] == "log1pexp"  # the tree went to standard error
    assert "NaN born here" in result.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
def test_a_full_disk_is_one_error_line(tmp_path):
    full = tmp_path / "g.svg"
    full.symlink_to("/dev/full")  # a name --graph takes, on a device that is always full
    assert_one_line_error(invoke("jacobian", "--graph", str(full)), "No space left on device")


@pytest.mark.parametrize(("json_name", "name", "fragment"), [
    ("r.json", "g.png", "give a file ending in .html or .svg"),
    ("r.json", "missing/g.html", "does not exist"),
    ("g.html", "g.html", "name the same file"),
])
def test_bad_graph_paths_are_one_line(tmp_path, json_name, name, fragment):
    result = invoke("jacobian", "--json", str(tmp_path / json_name), "--graph", str(tmp_path / name))
    assert_one_line_error(result, fragment)
    assert list(tmp_path.iterdir()) == []  # nothing written, not even the --json


def test_api_graph_draws_in_jupyter():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with gradlab.record():
        y = (x * x).sum()  # x used twice: its two gradients add
    view = gradlab.graph(y, names={"x": x})
    g = view.graphs[0]
    leaf = next(n for n in g.nodes if n.leaf)
    assert len(g.incoming(leaf)) == 2 and torch.equal(g.leaf_grads[leaf.id], 2 * x.detach())
    assert view._repr_html_().startswith('<div style="overflow:auto"><svg') and x.grad is None  # .grad untouched
    with pytest.raises(gradlab.errors.GradlabError, match="no grad_fn"):
        gradlab.graph(torch.ones(2))
    z = (x * 3).sum()
    z.backward()  # frees z's graph
    with pytest.raises(gradlab.errors.GradlabError, match="freed by an earlier backward"):
        gradlab.graph(z)
    x.grad = None
    deep = torch.nn.Sequential(*[torch.nn.Tanh() for _ in range(700)])(x).sum()
    with pytest.raises(gradlab.errors.GradlabError, match="draws up to 600"):
        gradlab.graph(deep)


@pytest.mark.parametrize("name", list(LESSONS))
def test_each_lesson_page_opens_offline_in_a_browser(graphs, name, tmp_path, browser):
    import matplotlib.image

    page = tmp_path / f"{name}.html"
    text = drawing.page(graphs[name], name)
    assert "http://" not in text and "https://" not in text  # nothing to fetch
    assert not re.search(r"\b(src|href)=", text)
    page.write_text(text)
    browser.open(page.as_uri())
    drawn = int(browser.js("document.body.getAttribute('data-drawn')"))  # the page's script counted the boxes
    assert drawn == sum(len(g.nodes) + len(g.cuts) for g in graphs[name])
    pixels = matplotlib.image.imread(io.BytesIO(browser.screenshot()), format="png")  # 1200×900, as a window shows
    assert pixels.shape[:2] == (900, 1200) and pixels.std() > 0.05  # not blank: boxes and text were drawn


def test_a_group_folds_away_in_the_browser(graphs, tmp_path, browser):
    """The page's fold button hides a group's leaves and the arrows into them (page.html#fold=GROUP presses it)."""
    g = next(g for g in graphs["dqn"] if g.forbidden)
    page = tmp_path / "dqn.html"
    page.write_text(drawing.page([g], "dqn"))
    browser.open(page.as_uri() + "#fold=target")
    dom = browser.dom()
    whole = dom[dom.rindex("<svg"):]  # the drawing with every node (the first has dqn's repeated layers folded)
    hidden = re.findall(r'<g class="(node|edge)" data-group="(\w*)"[^>]*style="display: none;"', whole)
    targets = [n for n in g.nodes if n.group == "target"]
    assert sorted(k for k, _ in hidden) == sorted(["node"] * len(targets) + ["edge"] * len(targets))
    assert {group for _, group in hidden} == {"target"} and 'class="folded"' in dom
    # in their place one box, the arrows into the group redrawn to it (a red one: gradient reaches the target)
    fold = re.search(r'<g class="fold" data-fold="target" style="">(.*?)<rect', whole).group(1)
    assert fold.count('class="edge"') == len({e.src for e in g.edges if g.nodes[e.dst].group == "target"})
    assert "#c5221f" in fold


def test_a_click_on_a_node_shows_its_chain_rule_sum(tmp_path, browser):
    """In Chromium, a real click on x's box (x used twice in Σ x·x) shows the two gradients arriving, [1, 2] each,
    and their sum [2, 4]; the right arrow key steps on; predict mode hides what the node sends until asked."""
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with gradlab.record():
        y = (x * x).sum()
    g = gradlab.graph(y, names={"x": x}).graphs[0]
    leaf = next(n for n in g.nodes if n.leaf)
    page = tmp_path / "g.html"
    page.write_text(drawing.page([g], "x·x"))
    browser.open(page.as_uri())  # and wait until it is drawn
    browser.click(f'g.node[data-node="g0n{leaf.id}"]')
    panel = browser.js("document.getElementById('panel').innerText")
    assert browser.js("document.querySelector('#panel .sum').textContent") == "2  [2, 4]", panel
    assert panel.count("from MulBackward0 #1") == 2 and panel.count("2  [1, 2]") == 3  # x itself, 2 gradients
    assert "2 uses: they add" in panel
    browser.click("#predict")
    browser.click('g.node[data-node="g0n0"]')
    assert browser.js("document.querySelector('#panel .rest').style.display") == "none"  # asked first
    browser.key("ArrowRight", 39)  # on to the next node autograd ran: MulBackward0
    assert browser.js("document.getElementById('panel').getAttribute('data-node')") == "g0n1"


def test_graph_command_draws_only_the_graph(tmp_path):
    """`gradlab graph LESSON --out FILE`: the lesson's graphs without its run: clip's clipping node, ddp's all-reduce
    node; a bad --out is one line and writes nothing."""
    for lesson, node in (("clip", "clip_by_global_norm"), ("ddp", "all_reduce(SUM)")):
        path = tmp_path / f"{lesson}.svg"
        result = invoke("graph", lesson, "--out", str(path))
        assert result.exit_code == 0 and f"wrote {path}" in result.output, result.output
        assert f">{node}<" in path.read_text()
    assert_one_line_error(invoke("graph", "clip", "--out", str(tmp_path / "g.png")), "--out")
    assert_one_line_error(invoke("graph", "clip", "--out", str(tmp_path / "no" / "g.html")), "does not exist")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clip.svg", "ddp.svg"]


SUMMED = '''import torch
import torch.nn.functional as F


def sgd_step(W, b, x, y, lr):
    cost = -(y * F.log_softmax(x @ W + b, dim=1)).sum()  # summed, not the mean: B times too large
    gW, gb = torch.autograd.grad(cost, [W, b])
    return W - lr * gW, b - lr * gb
'''


def test_check_graph_draws_the_students_backward_pass_beside_the_references(tmp_path):
    """`gradlab check FILE --graph OUT.html`: the submission's backward pass, caught in the sandbox, beside the
    reference's; the summed cost's first differing gradient (B times too large) is marked where it starts."""
    wrong = tmp_path / "sgd_step.py"
    wrong.write_text(SUMMED)
    out = tmp_path / "sgd_step.html"
    result = invoke("check", str(wrong), "--exercise", "mnist.sgd_step", "--graph", str(out))
    assert result.exit_code == 1 and f"wrote {out}" in result.output, result.output
    text = out.read_text()
    assert "your sgd_step(): its backward pass" in text and "the reference&#x27;s, on the same input" in text
    assert re.search(r"look at: MulBackward0 \(#\d+\), the first node whose gradient differs", text)
    drawn = text.split('<script type="application/json"')[0]
    assert drawn.count("≠ its gradient differs from the reference") == 1 and "http" not in text
    # each of the student's nodes says the line of their file that made it (the reference's none)
    assert "sgd_step.py:6  cost = -(y * F.log_softmax(x @ W + b, dim=1)).sum()" in drawn


def test_a_failed_check_says_how_to_draw_its_graph(capsys):
    """Without --graph, a check that failed ends with the command that draws the student's graph."""
    from types import SimpleNamespace

    from gradlab.practice.classroom import commands

    todo = SimpleNamespace(kind="source", shown="work/sgd_step.py", exercise=SimpleNamespace(no_autograd=False))
    commands._graph(todo, SimpleNamespace(exit_code=1), 0, None, make_console(quiet=False, stderr=False))
    assert "gradlab check work/sgd_step.py --graph sgd_step.html" in capsys.readouterr().out
    commands._graph(todo, SimpleNamespace(exit_code=0), 0, None, make_console(quiet=False, stderr=False))
    assert capsys.readouterr().out == ""


def test_check_graph_reads_what_comes_back_as_untrusted_data():
    """What the sandbox sends back is checked: a name cut to printable text, an index out of range, a pickle-like
    object or an oversized tensor is refused (one line), never drawn."""
    from gradlab.practice.inside import backward

    node = {"name": "Evil\x1b[31m<script>", "leaf": False, "label": "", "where": "", "shape": None, "order": 0,
            "grad_in": torch.ones(2), "grads_out": [torch.ones(2)]}
    ok = backward.checked({"nodes": [node], "edges": []})
    assert ok["nodes"][0]["name"] == "Evil[31m<script>"  # control characters dropped; the page escapes the rest
    for bad in ({"nodes": [node], "edges": [[0, 5, 0]]}, {"nodes": [{**node, "grad_in": "x"}], "edges": []},
                {"nodes": [{**node, "grad_in": torch.ones(1 << 17)}], "edges": []}, {"nodes": [], "edges": []},
                {"nodes": [{**node, "order": -1}], "edges": []}, [node]):
        with pytest.raises(backward.Bad):
            backward.checked(bad)
    page = drawing.page([backward.graph(ok, "g")], "t")
    assert "<script>" not in page.split("<script")[0] and "&lt;script&gt;" in page


def test_check_graph_is_one_file_and_a_known_suffix(tmp_path):
    (tmp_path / "a.py").write_text(SUMMED)
    assert_one_line_error(invoke("check", str(tmp_path), "--exercise", "mnist.sgd_step", "--graph",
                                 str(tmp_path / "g.html")), "is a folder")
    assert_one_line_error(invoke("check", str(tmp_path / "a.py"), "--graph", str(tmp_path / "g.png")), "--graph")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.py"]


def test_check_graph_catches_the_backward_the_harness_runs_and_a_class_exercise():
    """The first backward pass of the harness's call is caught, not only the function's own: dqn's td_loss returns a
    loss the harness differentiates, log1pexp's Log1pExp is a class the harness calls; leaves are named after the
    inputs they equal, a network's weights by their place in its list ("online[0]")."""
    from gradlab.practice import all_exercises, checks_of
    from gradlab.practice.inside import backward

    for name in ("dqn.td_loss", "log1pexp.Log1pExp"):
        checks = checks_of(all_exercises()[name])
        case = checks.cases(0)[0]
        caught = backward.Caught(checks.call, case)
        caught(checks.reference, case)
        data = backward.checked(caught.data)
        assert data is not None and len(data["nodes"]) >= 2, name
        if name == "dqn.td_loss":
            assert {"online[0]", "online[3]"} <= {n["label"] for n in data["nodes"]}


def test_check_graph_of_a_teachers_own_class_exercise(tmp_path):
    """A teacher's own exercise (teacher/graded, an autograd.Function class) is drawn from the sandbox: the graph its
    harness's backward pass runs, beside the reference's (one sandbox start: the graph's, no check before it)."""
    from pathlib import Path

    from gradlab.practice.classroom import course
    from gradlab.practice.judging import check, submission

    graded = Path(__file__).parents[1] / "teacher" / "graded"
    items = course.read(str(graded / "course.toml"))  # registers the course's own exercises
    answer = tmp_path / "Log1mExp.py"
    answer.write_text((graded / "log1pexp_graded" / "answers.py").read_text())
    todo = submission.of_file(str(answer), exercise_name=None, files_of={i.file: i.exercise for i in items},
                              course_check=False)
    mine, theirs = check.graphs(todo)
    assert mine.title.startswith("your Log1mExp(): its backward pass") and len(mine.nodes) >= 2
    assert mine.note == "look at: every node's gradient matches the reference's at the same op", mine.note
    assert theirs.title == "the reference's, on the same input"


def test_check_graph_of_a_gloo_exercise_is_one_line_before_anything_runs(tmp_path):
    """ddp's gloo exercises call the function in several worker processes: --graph says so in one line, exit 2,
    before the check runs (no table printed, no file written)."""
    from pathlib import Path

    right = Path(__file__).parent / "practice_corpus" / "ddp.average_gradients" / "right_flat_bucket.py"
    result = invoke("check", str(right), "--graph", str(tmp_path / "g.html"))
    assert_one_line_error(result, "gloo worker processes", "without --graph")
    assert "average_gradients() against the reference" not in result.output and not list(tmp_path.iterdir())


def test_each_student_node_keeps_the_line_of_their_file_that_made_it(tmp_path):
    """The sandbox's catch keeps, per node, the submission's line that made it (a TorchFunctionMode reading the
    stack: the first frame of the student's file), sanitized and cut: it shows in the box, its tooltip and the
    panel; a node made by the harness's own code (none here) or a leaf has none."""
    from gradlab.practice import all_exercises, checks_of
    from gradlab.practice.inside import backward

    path = tmp_path / "sgd_step.py"
    path.write_text(SUMMED)
    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    checks = checks_of(all_exercises()["mnist.sgd_step"])
    case = checks.cases(0)[0]
    caught = backward.Caught(checks.call, case, mine=lambda filename: filename == str(path))
    caught(namespace["sgd_step"], case)
    mine = backward.graph(backward.checked(caught.data), "yours")
    lines = {n.name: n.forward.where for n in mine.nodes if n.forward is not None}
    assert lines["MulBackward0"].startswith("sgd_step.py:6  cost = -(y * F.log_softmax(x @ W + b, dim=1)).sum()")
    assert lines["SumBackward0"] == lines["MulBackward0"] and not any(n.forward for n in mine.nodes if n.leaf)
    page = drawing.page([mine], "t")
    assert "<title>sgd_step.py:6  cost = -(y * F.log_softmax" in page
    evil = {**backward.checked(caught.data)}
    evil["nodes"] = [{**n, "where": "x.py:1  \x1b[2J\u202eevil" + "z" * 400} for n in evil["nodes"]]
    shown = backward.graph(evil, "e").nodes[0].forward.where
    assert "\x1b" not in shown and "\u202e" not in shown and len(shown) < 2 * backward.WHERE


def test_repeated_layers_are_drawn_once_and_folded(graphs):
    """A repeated block (dqn's Q-network: Linear → ReLU three times; a loop of the same ops) is drawn once, its other
    copies one "×N" box, in the SVG and the terminal's tree; the drawing with every node has them all; a graph
    without repeats (mnist's) has no box."""
    from gradlab.report import repeats

    g = by_title(graphs["dqn"], "stop-grad: TD")
    (series,) = repeats.find(g)
    assert (series.times, series.unit, series.layers) == (3, ["AddmmBackward0", "ReluBackward0"],
                                                          ["online.2", "online.0"])
    folded, whole = drawing.svg([g]), drawing.svg([g], fold=False)
    assert ">×3  AddmmBackward0 → ReluBackward0<" in folded and ">×3" not in whole
    assert ">online.4.weight  (AccumulateGrad)<" in folded and ">online.2.weight  (AccumulateGrad)<" not in folded
    assert ">online.2.weight  (AccumulateGrad)<" in whole
    assert folded.count('class="node"') == len(g.nodes) - len(series.rest) + len(g.cuts)
    console = make_console(quiet=False, stderr=False)
    with console.capture() as out:
        console.print(drawing.tree(g))
    assert "⋮ ×3  AddmmBackward0 → ReluBackward0" in out.get() and "online.2.weight" not in out.get()
    assert not repeats.find(graphs["mnist"][0])
    x, w = torch.tensor([1.0, 2.0], requires_grad=True), torch.tensor([0.5, 0.3], requires_grad=True)
    y = x
    for _ in range(5):
        y = torch.tanh(y * w)
    looped = gradlab.graph(y.sum(), names={"x": x, "w": w}).graphs[0]
    (loop,) = repeats.find(looped)
    assert (loop.times, loop.unit) == (5, ["TanhBackward0", "MulBackward0"])
    looped.nodes[loop.rest[-1]].facts.append("≠ its gradient differs")  # check --graph's mark, on a folded node
    assert ">a node inside is marked: unfold it<" in drawing.svg([looped])


def test_a_click_on_a_folded_series_unfolds_it_in_the_browser(graphs, tmp_path, browser):
    """In Chromium the page opens with dqn's repeated layers folded; a click on the "×3" box shows the drawing with
    every node, where a folded layer's weight can be clicked and its chain rule read."""
    g = by_title(graphs["dqn"], "stop-grad: TD")
    weight = next(n for n in g.nodes if n.label == "2.weight")
    page = tmp_path / "dqn.html"
    page.write_text(drawing.page([g], "dqn"))
    browser.open(page.as_uri())  # and wait until it is drawn
    shown = "Array.from(document.querySelectorAll('#view svg')).map(s => s.style.display).join(',')"
    assert browser.js(shown) == ",none"  # folded first
    browser.click("#fit")  # the whole drawing in view
    browser.click("g.series")
    assert browser.js(shown) == "none,"
    browser.key("0", 48)  # fit the unfolded drawing
    browser.click(f'#view svg:nth-of-type(2) g.node[data-node="g0n{weight.id}"]')
    assert browser.js("document.querySelector('#panel h2').textContent").startswith("online.2.weight")


def test_the_exercises_on_gloo_workers_say_so_and_suggest_no_graph():
    """Exercise.on_workers (torch-free: the starter and a failed check read it) is true exactly where the harness
    starts gloo workers; their starters do not suggest --graph, the others' do."""
    from gradlab.practice import all_exercises, checks_of
    from gradlab.practice.classroom.starter import starter

    for name, exercise in all_exercises().items():
        assert exercise.on_workers == (checks_of(exercise).harness.prepare is not None), name
        text = starter(exercise, f"{exercise.function}.py")
        assert ("--graph" in text) == (not exercise.no_autograd and not exercise.on_workers), name
    assert all_exercises()["ddp.average_gradients"].on_workers
