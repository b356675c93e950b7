"""The two decode paths, the model file and the op overrides, in process."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from relpipe.engine import model
from relpipe.engine.adapters.atom import OpBindingError, load_ops
from relpipe.engine.decode import OpError, Ops, greedy, make_decoder
from relpipe.engine.errors import EngineError
from relpipe.engine.evals import parity

PROMPTS = [model.encode("ab"), model.encode("xyz!")]  # different lengths share the position counter


@pytest.fixture(scope="module")
def weights() -> model.Weights:
    return model.init_weights(model.TINY, seed=0)


def test_reference_greedy_is_deterministic_and_batch_independent(weights: model.Weights) -> None:
    both = greedy(make_decoder("reference", weights), PROMPTS, 5)
    alone = greedy(make_decoder("reference", weights), PROMPTS[1:], 5)
    again = greedy(make_decoder("reference", weights), PROMPTS, 5)
    assert both.tokens == again.tokens
    assert both.tokens[1] == alone.tokens[0]  # a shorter neighbour does not change a sequence
    assert [len(t) for t in both.tokens] == [5, 5]
    assert both.steps == 4 + 5 - 1


def test_mono_matches_reference_per_kv_dtype(weights: model.Weights) -> None:
    results = parity.run(
        weights, [model.encode("ab"), model.encode("q")], 2, ["fp32", "bf16", "fp8"], Ops(), "cpu"
    )
    assert [r.kv_dtype for r in results] == ["fp32", "bf16", "fp8"]
    for r in results:
        assert r.ok, r
        assert r.positions == 4 and r.agreement == 1.0
    assert results[0].max_logit_diff < 1e-4


def test_parity_compare_flags_a_perturbed_logit_set() -> None:
    ref = torch.randn(1, 4, 256)
    tokens = ref.argmax(-1).tolist()
    bad = ref.clone()
    bad[0, 2] = torch.randn(256) * 5
    r = parity.compare(ref, tokens, bad, "fp32")
    assert not r.ok and r.agreement <= 0.75 and r.max_logit_diff > 1.0
    assert parity.compare(ref, tokens, ref.clone(), "fp32").ok


def test_teacher_forcing_feeds_the_given_tokens(weights: model.Weights) -> None:
    forced = [[65, 66, 67], [68, 69, 70]]
    gen = greedy(make_decoder("reference", weights), PROMPTS, 3, force=forced)
    assert gen.tokens == forced


def test_bad_decode_inputs_are_refused(weights: model.Weights) -> None:
    dec = make_decoder("reference", weights)
    with pytest.raises(EngineError, match="non-empty prompts"):
        greedy(dec, [[]], 3)
    with pytest.raises(EngineError, match=r"prompt tokens must be in \[0, 256\)"):
        greedy(dec, [[300]], 3)
    with pytest.raises(EngineError, match="unknown decode path"):
        make_decoder("fast", weights)
    with pytest.raises(EngineError, match="unknown KV cache dtype"):
        make_decoder("reference", weights, "int4")


def test_weights_file_round_trip_and_rejections(tmp_path: Path, weights: model.Weights) -> None:
    path = tmp_path / "w.pt"
    model.save(weights, str(path))
    loaded = model.load(str(path))
    assert loaded.config == weights.config
    assert all(
        torch.equal(a, b)
        for a, b in zip(loaded.tensors().values(), weights.tensors().values(), strict=True)
    )
    assert (
        greedy(make_decoder("reference", loaded), PROMPTS, 2).tokens
        == greedy(make_decoder("reference", weights), PROMPTS, 2).tokens
    )
    (tmp_path / "junk.pt").write_bytes(b"not a zip")
    with pytest.raises(EngineError, match="not a readable weights archive"):
        model.load(str(tmp_path / "junk.pt"))
    tensors = {k: v.clone() for k, v in weights.tensors().items()}
    tensors["wo"] = tensors["wo"][:, :, :8]
    torch.save(
        {"format": "relpipe-tiny-v1", "config": weights.config.__dict__, "tensors": tensors},
        tmp_path / "bad.pt",
    )
    with pytest.raises(EngineError, match="tensor wo must be a float tensor of shape"):
        model.load(str(tmp_path / "bad.pt"))
    tensors = {k: v.clone() for k, v in weights.tensors().items()}
    tensors["lm_head"][0, 0] = float("nan")
    torch.save(
        {"format": "relpipe-tiny-v1", "config": weights.config.__dict__, "tensors": tensors},
        tmp_path / "nan.pt",
    )
    with pytest.raises(EngineError, match="non-finite"):
        model.load(str(tmp_path / "nan.pt"))
    with pytest.raises(EngineError, match="cannot read it"):
        model.load(str(tmp_path / "missing.pt"))


def test_model_config_is_validated() -> None:
    with pytest.raises(EngineError, match="n_kv_heads must divide"):
        model.ModelConfig(n_heads=4, n_kv_heads=3)
    with pytest.raises(EngineError, match="positive integer"):
        model.ModelConfig(n_layers=0)


def test_image_ops_are_bound_with_atoms_real_signatures(
    weights: model.Weights, fake_atom: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(fake_atom("good")))
    ops, notes = load_ops("auto")
    assert ops.provider == {"rms_norm": "atom", "silu_and_mul": "atom"}
    assert notes == [
        "rms_norm: bound to atom.model_ops.layernorm.rmsnorm2d_fwd(x, weight, eps)",
        "silu_and_mul: bound to atom.model_ops.activation.silu_and_mul(out, x)",
    ]
    assert parity.run(weights, PROMPTS[:1], 2, ["fp32"], ops, "cpu")[0].ok
    assert load_ops("engine")[0].provider == {"rms_norm": "engine", "silu_and_mul": "engine"}


def test_a_failed_binding_in_an_atom_image_is_a_fail_not_a_fallback(
    fake_atom: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(fake_atom("norm-only")))
    with pytest.raises(OpBindingError, match=r"activation\.silu_and_mul: not importable") as err:
        load_ops("auto")
    assert err.value.exit_code == 1


def test_the_old_functional_silu_signature_is_reported(
    weights: model.Weights, fake_atom: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(fake_atom("functional-act")))
    ops, _ = load_ops("atom")
    with pytest.raises(TypeError, match="positional argument"):
        greedy(make_decoder("mono", weights, ops=ops), PROMPTS[:1], 1)


def test_op_with_wrong_shape_is_an_op_error(
    weights: model.Weights, fake_atom: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(fake_atom("wrong-shape")))
    ops, _ = load_ops("atom")
    with pytest.raises(OpError, match=r"op rms_norm returned \(1, 63\), expected .*\(1, 64\)"):
        greedy(make_decoder("mono", weights, ops=ops), PROMPTS[:1], 1)


def test_ops_atom_without_atom_is_an_error() -> None:
    with pytest.raises(EngineError, match="ATOM op binding failed: atom.model_ops.layernorm"):
        load_ops("atom")
    ops, notes = load_ops("auto")
    assert ops.provider == {"rms_norm": "engine", "silu_and_mul": "engine"}
    assert notes == ["no atom package in the image: relpipe's kernels ran"]
