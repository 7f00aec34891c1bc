"""The student corpus (tests/practice_corpus/, see its README): every right answer passes, every wrong answer fails,
and the diagnosis of every wrong answer names the relation its author meant, by a key phrase per file. Each file is
judged in this process (tests/inprocess.py): its function through the exercise's harness, as the sandbox calls it.

HOW says how the phrase is reached: "known" (one of the exercise's named mistakes), "experiment" (measured by the
diagnosis: a relation per output, a family of inputs, a weighted sum of parts, a rule on the inputs), "error"
(PyTorch's exception at the student's line, explained) or "forbidden" (a call to the library function the exercise
asks the student to write, noted as the sandbox's child notes it). No wrong file is left undiagnosed."""

from pathlib import Path

import pytest
from inprocess import judged_file

CORPUS = Path(__file__).parent / "practice_corpus"

# file -> (how, the phrase the diagnosis, or the stop message with its explanation, must contain)
EXPECTED = {
    "mnist.sgd_step/wrong_forgot_b.py": ("known", "b forgotten"),
    "mnist.sgd_step/wrong_inplace_leaf.py": ("error", "Return new tensors, W - lr * gW"),
    "mnist.sgd_step/wrong_inplace_nograd.py": ("experiment", "changed W, b in place"),
    "mnist.sgd_step/wrong_log_of_softmax.py": ("experiment", "log(softmax(z)) is log 0"),
    "mnist.sgd_step/wrong_log_softmax_dim0.py": ("experiment", "log_softmax runs over the batch (dim=0)"),
    "mnist.sgd_step/wrong_lr_on_grad_twice.py": ("experiment", "lr × the expected update"),
    "mnist.sgd_step/wrong_reduce_mean_all.py": ("experiment", "1/K × the expected update"),
    "mnist.sgd_step/wrong_sign.py": ("known", "uphill"),
    "mnist.sgd_step/wrong_softmax_twice.py": ("known", "softmax twice"),
    "mnist.sgd_step/wrong_sum_not_mean.py": ("known", "summed cost"),
    "mnist.softmax_grad/wrong_divided_twice.py": ("experiment", "1/B × the expected"),
    "mnist.softmax_grad/wrong_gW_not_divided.py": ("known", "∂W's /B forgotten"),
    "mnist.softmax_grad/wrong_gb_sum.py": ("known", "∂b summed"),
    "mnist.softmax_grad/wrong_naive_softmax.py": ("experiment", "exp(z) overflows to inf"),
    "mnist.softmax_grad/wrong_no_keepdim.py": ("error", "keepdim=True"),
    "mnist.softmax_grad/wrong_sigmoid.py": ("experiment", "does not sum to 0 over the 10 classes"),
    "mnist.softmax_grad/wrong_sign.py": ("known", "sign:"),
    "mnist.softmax_grad/wrong_softmax_dim0.py": ("experiment", "softmax taken over the batch (dim=0)"),
    "mnist.softmax_grad/wrong_transposed.py": ("experiment", "the transpose of the expected"),
    "mnist.softmax_grad/wrong_uses_autograd.py": ("experiment", "built an autograd graph"),
    "clip.clip_by_global_norm/wrong_always_rescale.py": ("known", "always rescaled"),
    "clip.clip_by_global_norm/wrong_inplace_inputs.py": ("experiment", "changed grads in place"),
    "clip.clip_by_global_norm/wrong_l1_norm.py": ("experiment", "the L1 norm"),
    "clip.clip_by_global_norm/wrong_mean_of_squares.py": ("experiment", "a mean of the squares"),
    "clip.clip_by_global_norm/wrong_min_not_max.py": ("experiment", "min where max belongs"),
    "clip.clip_by_global_norm/wrong_no_sqrt.py": ("experiment", "the square root is missing"),
    "clip.clip_by_global_norm/wrong_per_tensor.py": ("known", "per tensor"),
    "clip.clip_by_global_norm/wrong_returns_tuple.py": ("experiment", "returned on the input 'norm above the cap': "
                                                                      "what clip_by_global_norm returned is a tuple"),
    "clip.clip_by_global_norm/wrong_sum_of_norms.py": ("experiment", "you added the tensors' norms"),
    "clip.clip_by_global_norm/wrong_uses_clip_grad_norm_.py": ("forbidden", "uses torch.nn.utils.clip_grad_norm_, "
                                                                            "which this exercise asks you to write"),
    "jacobian.jacobian_loop/wrong_assumes_requires_grad.py": ("error", "x.detach().requires_grad_(True)"),
    "jacobian.jacobian_loop/wrong_float32_buffer.py": ("experiment", "comes back as float32 where float64"),
    "jacobian.jacobian_loop/wrong_grad_not_zeroed.py": ("known", "rows piled up"),
    "jacobian.jacobian_loop/wrong_no_retain_graph.py": ("error", "retain_graph=True to every call"),
    "jacobian.jacobian_loop/wrong_ones_grad_outputs.py": ("known", "rows summed"),
    "jacobian.jacobian_loop/wrong_square_assumed.py": ("error", "not range(len(x)), the n inputs"),
    "jacobian.jacobian_loop/wrong_stack_dim1.py": ("known", "transposed"),
    "jacobian.jacobian_loop/wrong_unit_vector_size_n.py": ("error", "grad_outputs must have the shape of the output"),
    "jacobian.jacobian_loop/wrong_uses_jacrev.py": ("forbidden", "uses torch.func.jacrev, which this exercise asks you "
                                                                 "to write"),
    "log1pexp.Log1pExp/wrong_abs_in_backward.py": ("experiment", "the second derivative differs only at x = 0"),
    "log1pexp.Log1pExp/wrong_backward_no_grad.py": ("known", "sigmoid(x.detach()) in backward"),
    "log1pexp.Log1pExp/wrong_forgot_abs.py": ("experiment", "the value differs where x < 0"),
    "log1pexp.Log1pExp/wrong_forgot_dy.py": ("experiment", "right when dy = 1, wrong for another upstream gradient"),
    "log1pexp.Log1pExp/wrong_naive_backward.py": ("known", "exp in the backward"),
    "log1pexp.Log1pExp/wrong_naive_forward.py": ("experiment", "the value is inf where x ≥ 89"),
    "log1pexp.Log1pExp/wrong_saved_sigmoid.py": ("known", "sigmoid(x) saved from forward"),
    "log1pexp.Log1pExp/wrong_tutorial_saved_e.py": ("known", "e kept on ctx"),
    "log1pexp.Log1pExp/wrong_where_guard_backward.py": ("experiment", "the second derivative is NaN where |x| ≥ 89"),
    "gaussian-policy.score/wrong_batch_mean.py": ("experiment", "the mean of the expected over all its entries"),
    "gaussian-policy.score/wrong_inplace_a.py": ("experiment", "changed a in place"),
    "gaussian-policy.score/wrong_mu_over_sigma.py": ("experiment", "∂ln π/∂μ (your first output) = σ ⊙ expected"),
    "gaussian-policy.score/wrong_mu_sign.py": ("known", "sign:"),
    "gaussian-policy.score/wrong_sigma_missing_term.py": ("known", "−1/σ missing"),
    "gaussian-policy.score/wrong_sigma_power2.py": ("experiment", "∂ln π/∂σ (your second output) = σ ⊙ expected"),
    "gaussian-policy.score/wrong_swapped_outputs.py": ("experiment", "(your first output) = the expected ∂ln π/∂σ"),
    "gaussian-policy.score/wrong_returns_sigma_first.py": ("experiment", "(your second output) = the expected ∂ln "
                                                                         "π/∂μ (your first output) on every input"),
    "gaussian-policy.score/wrong_wrt_log_sigma.py": ("experiment", "the derivative with respect to log σ"),
    "gaussian-policy.score/wrong_uses_normal_log_prob.py": ("forbidden", "uses torch.distributions.Normal.log_prob, "
                                                                         "which this exercise asks you to write"),
    "gaussian-policy.score/wrong_wrt_variance.py": ("known", "∂/∂σ²"),
    "dqn.td_loss/wrong_argmax_not_max.py": ("experiment", "bootstraps from the index of the best action"),
    "dqn.td_loss/wrong_detach_q.py": ("experiment", "no gradient reaches online's parameters"),
    "dqn.td_loss/wrong_done_inverted.py": ("experiment", "done and 1 − done swapped"),
    "dqn.td_loss/wrong_gather_no_squeeze.py": ("experiment", "Q of shape (N, 1) broadcast against y"),
    "dqn.td_loss/wrong_index_columns.py": ("known", "q[:, a]"),
    "dqn.td_loss/wrong_mse.py": ("experiment", "the squared error (F.mse_loss), not the Huber loss"),
    "dqn.td_loss/wrong_no_detach.py": ("known", "no stop-gradient"),
    "dqn.td_loss/wrong_no_done_mask.py": ("known", "done ignored"),
    "dqn.td_loss/wrong_online_for_target.py": ("known", "online target"),
    "dqn.td_loss/wrong_sum_reduction.py": ("experiment", "N × the expected"),
    "dqn.td_loss/wrong_max_q_not_taken.py": ("known", "max Q(s), not Q(s, a)"),
    "dqn.td_loss/wrong_max_q_values.py": ("known", "max Q(s), not Q(s, a)"),
    "dqn.td_loss/wrong_max_q_keepdim.py": ("known", "max Q(s), not Q(s, a)"),
    "dqn.td_loss/wrong_max_q_summed.py": ("experiment", "the Q of another action than a (max Q(s)"),
    "dqn.td_loss/wrong_done_on_reward.py": ("known", "(1 − done) on r too"),
    "dqn.td_loss/wrong_mask_then_add.py": ("known", "(1 − done) on r too"),
    "actor-critic.critic_update/wrong_backward_accumulates.py": ("known", ".grad added to"),
    "actor-critic.critic_update/wrong_detach_value.py": ("experiment", "V(s) detached instead of the target"),
    "actor-critic.critic_update/wrong_half_mse.py": ("experiment", "1/2 × the expected"),
    "actor-critic.critic_update/wrong_manual_sgd.py": ("experiment", "a hand-written SGD step"),
    "actor-critic.critic_update/wrong_no_detach_target.py": ("known", "residual gradient"),
    "actor-critic.critic_update/wrong_no_done_mask.py": ("experiment", "right for non-terminal transitions, wrong "
                                                                       "for terminal ones"),
    "actor-critic.critic_update/wrong_shape_broadcast.py": ("experiment", "V(s) of shape (N, 1) against the target"),
    "actor-critic.critic_update/wrong_sum_not_mean.py": ("experiment", "N × the expected"),
    "actor-critic.critic_update/wrong_zero_grad_after_set.py": ("experiment", "optimizer.step() ran in update 1 "
                                                                              "on '3 updates of 32 transitions, some "
                                                                              "terminal' with every .grad empty"),
    "ddp.accumulated_grad/wrong_divided_twice.py": ("experiment", "w_k = 1/B"),
    "ddp.accumulated_grad/wrong_mean_over_k.py": ("known", "mean of means"),
    "ddp.accumulated_grad/wrong_no_zero_grad.py": ("known", "no zero_grad"),
    "ddp.accumulated_grad/wrong_offsets_equal_sizes.py": ("experiment", "right for equal micro-batches, wrong for "
                                                                        "unequal ones"),
    "ddp.accumulated_grad/wrong_returns_last_grads.py": ("experiment", "the last part's n_K/B alone"),
    "ddp.accumulated_grad/wrong_sum_not_divided.py": ("experiment", "B × the expected"),
    "ddp.accumulated_grad/wrong_sum_of_means.py": ("known", "/K forgotten"),
    "ddp.accumulated_grad/wrong_zero_inside_loop.py": ("experiment", "the last part's n_K/B alone"),
    "ddp.average_gradients/wrong_equal_weights.py": ("known", "equal weights"),
    "ddp.average_gradients/wrong_forgot_n_local.py": ("experiment", "w_r = 1/B (n_r missing)"),
    "ddp.average_gradients/wrong_integer_division.py": ("experiment", "n_local // n_total is 0"),
    "ddp.average_gradients/wrong_inverted_weight.py": ("experiment", "the fraction upside down"),
    "ddp.average_gradients/wrong_loop_rebinds.py": ("known", "rebinds g"),
    "ddp.average_gradients/wrong_reduce_to_rank0.py": ("experiment", "right on rank 0 only"),
    "ddp.average_gradients/wrong_reduceop_avg.py": ("known", "equal weights"),
    "ddp.average_gradients/wrong_sum_only.py": ("known", "sum of means"),
    "ddp.average_gradients/wrong_weighted_then_averaged.py": ("experiment", "averaged twice"),
    "ddp.average_gradients/wrong_float32_bucket.py": ("experiment", "float32 precision"),
    "ddp.average_gradients/wrong_half_precision_reduce.py": ("experiment", "float32 precision"),
}

# file -> what its diagnosis once said and must not say again (#34: feedback that misleads)
MISLEADS = {
    "dqn.td_loss/wrong_max_q_not_taken.py": "right for one transition, wrong for a batch",
    "dqn.td_loss/wrong_done_on_reward.py": "multiply the bootstrap γ · max target(s2) by (1 − done): after",
    "dqn.td_loss/wrong_mask_then_add.py": "multiply the bootstrap γ · max target(s2) by (1 − done): after",
    "ddp.average_gradients/wrong_float32_bucket.py": "= the expected rank",
    "ddp.average_gradients/wrong_half_precision_reduce.py": "= the expected rank",
    "gaussian-policy.score/wrong_returns_sigma_first.py": "−1/σ missing",
}

FILES = sorted(str(p.relative_to(CORPUS)) for p in CORPUS.glob("*/*.py"))


def said(result) -> str:
    return " ".join(" ".join([result.stopped or "", result.metrics.get("diagnosis") or "", *result.notes]).split())


def test_every_wrong_file_has_its_expected_phrase_and_every_file_is_in_the_corpus():
    wrong = [f for f in FILES if Path(f).name.startswith("wrong_")]
    assert sorted(EXPECTED) == wrong and len(FILES) == 131
    assert all(how in ("known", "experiment", "error", "forbidden") for how, _ in EXPECTED.values())


@pytest.mark.parametrize("name", FILES)
def test_the_corpus_is_graded_right_and_each_wrong_answer_diagnosed(name):
    exercise = name.split("/")[0]
    result = judged_file(str(CORPUS / name), exercise)
    if Path(name).name.startswith("right_"):
        assert result.exit_code == 0, said(result)
        return
    how, phrase = EXPECTED[name]
    assert result.exit_code == 1
    assert phrase in said(result), said(result)
    assert name not in MISLEADS or MISLEADS[name] not in said(result), said(result)
    if how == "known":
        assert result.metrics["diagnosis"].split(":")[0] in phrase or phrase in result.metrics["diagnosis"]
