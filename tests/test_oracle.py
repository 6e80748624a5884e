"""The float64 recurrent oracle against closed forms, invariants and an independent chunked algorithm."""

import numpy as np
import pytest

from cgdr_des.errors import InputError
from cgdr_des.numerics.oracle import recurrent_reference


def draw(lengths, nk, nv, dk, dv, seed=0, gamma=True, beta_scale=1.0):
    rng = np.random.default_rng(seed)
    t, b = sum(lengths), len(lengths)
    q = rng.standard_normal((t, nk, dk))
    k = rng.standard_normal((t, nk, dk))
    k /= np.linalg.norm(k, axis=-1, keepdims=True)  # keeps the recurrence contractive
    v = rng.standard_normal((t, nv, dv))
    beta = rng.uniform(0, 1, (t, nv)) * beta_scale
    g = -rng.uniform(0.01, 1.0, (t, nv)) if gamma else None
    s0 = rng.standard_normal((b, nv, dv, dk)) * 0.1
    return dict(query=q, key=k, value=v, beta=beta, initial_state=s0,
                actual_seq_lengths=np.array(lengths), g=g, scale_value=dk**-0.5)


def chunked_reference(inp, chunk):
    """docs/math.md §2 in fla's K-first state h = Sᵀ, with an explicit matrix inverse per chunk."""
    q, k, v, beta, s0, g = (inp[n] for n in ("query", "key", "value", "beta", "initial_state", "g"))
    t, nk, dk = q.shape
    nv, dv = v.shape[1:]
    out = np.zeros((t, nv, dv))
    final = np.zeros_like(s0)
    gg = np.zeros((t, nv)) if g is None else g
    start = 0
    for b, n in enumerate(inp["actual_seq_lengths"]):
        for h in range(nv):
            kh = h * nk // nv  # repeat_interleave of the q/k heads
            hstate = s0[b, h].T.copy()
            for c0 in range(start, start + n, chunk):
                c1 = min(c0 + chunk, start + n)
                hstate = _chunk(q[c0:c1, kh], k[c0:c1, kh], v[c0:c1, h], beta[c0:c1, h], gg[c0:c1, h],
                                hstate, inp["scale_value"], out[c0:c1, h])
            final[b, h] = hstate.T
        start += n
    return out, final


def _chunk(Q, K, V, b, g, h0, scale, out):
    c = len(b)
    gc = np.cumsum(g)
    diff = np.tril(gc[:, None] - gc[None, :])
    gamma = np.tril(np.exp(diff))
    a_kk = np.tril((b[:, None] * (K @ K.T)) * gamma, -1)
    A = np.linalg.inv(np.eye(c) + a_kk)
    w = A @ (K * (b * np.exp(gc))[:, None])
    u = A @ (V * b[:, None])
    v_new = u - w @ h0
    out[:] = scale * ((Q * np.exp(gc)[:, None]) @ h0 + np.tril((Q @ K.T) * gamma) @ v_new)
    return np.exp(gc[-1]) * h0 + (K * np.exp(gc[-1] - gc)[:, None]).T @ v_new


@pytest.mark.parametrize("gamma", [True, False])
@pytest.mark.parametrize("chunk", [64, 16])
def test_matches_independent_chunked_form(gamma, chunk):
    inp = draw([70, 0, 130, 5], nk=2, nv=4, dk=16, dv=12, seed=1, gamma=gamma)
    out, final = recurrent_reference(**inp)
    ref_out, ref_final = chunked_reference(inp, chunk)
    np.testing.assert_allclose(out, ref_out, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(final, ref_final, rtol=1e-9, atol=1e-11)


def test_beta_zero_no_gamma_reads_initial_state():
    inp = draw([9, 4], nk=1, nv=2, dk=8, dv=6, gamma=False, beta_scale=0.0)
    out, final = recurrent_reference(**inp)
    np.testing.assert_array_equal(final, inp["initial_state"])
    s0 = np.repeat(inp["initial_state"], [9, 4], axis=0)  # per token, its sequence's state
    q = np.repeat(inp["query"], 2, axis=1)
    expected = inp["scale_value"] * np.einsum("thvk,thk->thv", s0, q)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-14)


def test_beta_zero_with_gamma_only_decays():
    inp = draw([11], nk=2, nv=2, dk=4, dv=4, beta_scale=0.0)
    out, final = recurrent_reference(**inp)
    decay = np.exp(np.cumsum(inp["g"], axis=0))  # [T, Nv]
    np.testing.assert_allclose(final[0], decay[-1][:, None, None] * inp["initial_state"][0], rtol=1e-12)
    expected = inp["scale_value"] * decay[:, :, None] * np.einsum(
        "hvk,thk->thv", inp["initial_state"][0], inp["query"])
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-14)


def test_delta_rule_writes_value_at_its_key():
    """beta=1, unit k, q=k, scale=1: the rank-1 write makes S_t k_t = v_t exactly, so o_t = v_t."""
    inp = draw([25], nk=1, nv=3, dk=8, dv=5)
    inp.update(beta=np.ones_like(inp["beta"]), query=inp["key"], scale_value=1.0)
    out, _ = recurrent_reference(**inp)
    np.testing.assert_allclose(out, inp["value"], rtol=1e-10, atol=1e-12)


def test_first_token_from_zero_state():
    inp = draw([1], nk=1, nv=1, dk=6, dv=4)
    inp["initial_state"] = np.zeros_like(inp["initial_state"])
    out, final = recurrent_reference(**inp)
    b, v, k, q = inp["beta"][0, 0], inp["value"][0, 0], inp["key"][0, 0], inp["query"][0, 0]
    np.testing.assert_allclose(final[0, 0], b * np.outer(v, k), rtol=1e-13)
    np.testing.assert_allclose(out[0, 0], inp["scale_value"] * b * v * (k @ q), rtol=1e-13)


def test_gqa_equals_repeated_heads():
    inp = draw([20, 7], nk=2, nv=6, dk=8, dv=4, seed=4)
    rep = dict(inp, query=np.repeat(inp["query"], 3, axis=1), key=np.repeat(inp["key"], 3, axis=1))
    for a, b in zip(recurrent_reference(**inp), recurrent_reference(**rep), strict=True):
        np.testing.assert_array_equal(a, b)


def test_sequences_are_independent_and_empty_ones_pass_state_through():
    lengths = [6, 0, 9]
    inp = draw(lengths, nk=1, nv=2, dk=4, dv=3, seed=5)
    out, final = recurrent_reference(**inp)
    np.testing.assert_array_equal(final[1], inp["initial_state"][1])
    start = 0
    for b, n in enumerate(lengths):
        one = {key: (val[start:start + n] if key in ("query", "key", "value", "beta", "g") else val)
               for key, val in inp.items()}
        one.update(initial_state=inp["initial_state"][b:b + 1], actual_seq_lengths=[n])
        o1, f1 = recurrent_reference(**one)
        np.testing.assert_allclose(out[start:start + n], o1, rtol=1e-13)
        np.testing.assert_allclose(final[b], f1[0], rtol=1e-13)
        start += n


def test_accepts_fp16_and_returns_float64():
    inp = draw([5], nk=1, nv=1, dk=4, dv=4)
    half = {k: (v.astype(np.float16) if isinstance(v, np.ndarray) and v.dtype.kind == "f" else v)
            for k, v in inp.items()}
    out, final = recurrent_reference(**half)
    assert out.dtype == final.dtype == np.float64
    assert out.shape == (5, 1, 4) and final.shape == (1, 1, 4, 4)


@pytest.mark.parametrize("change, field", [
    (dict(actual_seq_lengths=np.array([3, 2])), "actual_seq_lengths"),
    (dict(actual_seq_lengths=np.array([7, -1])), "actual_seq_lengths"),
    (dict(beta=np.zeros((6, 3))), "beta"),
    (dict(key=np.zeros((6, 2, 5))), "key"),
    (dict(g=np.zeros((6, 1))), "g"),
])
def test_bad_input_names_the_field(change, field):
    inp = dict(draw([4, 2], nk=2, nv=2, dk=4, dv=4), **change)
    with pytest.raises(InputError, match=field):
        recurrent_reference(**inp)


def test_value_heads_must_be_a_multiple_of_qk_heads():
    inp = draw([3], nk=2, nv=3, dk=4, dv=4)
    with pytest.raises(InputError, match="multiple"):
        recurrent_reference(**inp)


# ---------------------------------------------------------------- precision helpers used with the oracle

def test_metrics_closed_forms():
    from cgdr_des.numerics.metrics import cosine, max_abs_diff, nrmse, rel_rms

    a = np.array([1.0, 0.0, 2.0])
    assert cosine(a, 3 * a) == pytest.approx(1.0)
    assert cosine(a, np.array([0.0, 5.0, 0.0])) == 0.0
    assert cosine(np.zeros(3), np.zeros(3)) == 1.0 and cosine(a, np.zeros(3)) == 0.0
    assert nrmse(a, 1.01 * a) == pytest.approx(0.01)  # rms(0.01 a) / rms(a)
    assert nrmse(np.zeros(3), np.zeros(3)) == 0.0 and nrmse(np.zeros(3), a) == float("inf")
    b = np.array([2.0, 1.0, 0.0])
    assert rel_rms(a, b) == rel_rms(b, a) == pytest.approx(np.sqrt(6 / 3) / np.sqrt(5 / 3))
    assert max_abs_diff(a, b) == 2.0
    with pytest.raises(InputError, match="shape"):
        cosine(a, np.ones(4))


def test_fp16_rounding_is_nearest_even():
    from cgdr_des.numerics.fp import fp16_overflow, round_fp16, to_fp16

    ulp = 2.0**-10  # fp16 spacing at 1.0
    x = np.array([1 + ulp / 2, 1 + 3 * ulp / 2, 65504.0, 65519.0, 65520.0])
    assert to_fp16(x).dtype == np.float16
    np.testing.assert_array_equal(round_fp16(x[:2], np.float64), [1.0, 1 + 2 * ulp])  # ties to even
    assert not fp16_overflow(x[:4]) and fp16_overflow(x[4:])
    assert not fp16_overflow(np.array([np.inf]))  # already infinite is not an fp16 overflow
