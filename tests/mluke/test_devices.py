"""device= and dtype= of the model paths: names resolved, inputs following the model, bf16 answers close to
fp32, scores and vectors back as float32 on the CPU."""

import numpy as np
import pytest
import torch

import mluke
from mluke.models.devices import place, resolve_device, resolve_dtype


def test_device_and_dtype_names():
    assert resolve_device(None) is None and resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("auto") == torch.device("cuda" if torch.cuda.is_available() else "cpu")
    assert resolve_dtype("bf16") is resolve_dtype("bfloat16") is torch.bfloat16
    assert resolve_dtype("fp32") is torch.float32 and resolve_dtype(None) is None
    with pytest.raises(mluke.MlukeError, match="expected one of"):
        resolve_dtype("int4")
    with pytest.raises(mluke.MlukeError, match="expected 'auto'"):
        resolve_device("gpu-please")
    if not torch.cuda.is_available():
        with pytest.raises(mluke.MlukeError, match="CUDA is not available"):
            resolve_device("cuda")


def test_inputs_follow_the_model(tiny_demo, monkeypatch):
    """The encoders move the tokenizer's CPU tensors to the model's device: the device they are asked to
    move to is the model's (a pretend "meta" GPU here), and the move itself puts every tensor there."""
    import mluke.models.masked_lm as model_module
    from mluke.models.devices import to_device

    model, tok, _ = mluke.load(tiny_demo)
    enc = tok(["Tokyo is the capital of Japan."], entity_spans=[[(0, 5)]])
    moved = to_device(dict(enc), torch.device("meta"))
    assert all(v.device.type == "meta" for v in moved.values() if isinstance(v, torch.Tensor))
    asked = []
    monkeypatch.setattr(model_module, "to_device", lambda inputs, device: asked.append(device) or inputs)
    monkeypatch.setattr(type(model), "device", property(lambda self: torch.device("meta")))
    model.encode(**enc)
    model.encode_entities(**enc)
    assert asked == [torch.device("meta")] * 2


def test_bf16_probe_link_and_spans_agree_with_fp32(tiny_demo, embedded_db):
    full = mluke.probe("[X] is the capital of [Y].", "en", model=tiny_demo, db=embedded_db, top_k=1)
    half = mluke.probe("[X] is the capital of [Y].", "en", model=tiny_demo, db=embedded_db, top_k=1, dtype="bf16")
    a, b = full.to_pandas(), half.to_pandas()
    assert len(a) == len(b) > 20
    assert (a["prediction"].values == b["prediction"].values).mean() >= 0.9
    assert np.isfinite(b["score"].values).all() and b["score"].dtype == np.float64
    text = "Ich wohne in Berlin, der Hauptstadt von Deutschland."
    keys = [m.key for m in mluke.link(text, "de", model=tiny_demo, db=embedded_db)]
    assert keys == [m.key for m in mluke.link(text, "de", model=tiny_demo, db=embedded_db, dtype="bf16")]
    bundle = mluke.load(tiny_demo)
    texts, spans = ["Paris is in France.", "京都は日本の都市です。"], [[(0, 5), (12, 18)], [(0, 2), (3, 5)]]
    exact = mluke.span_vectors(bundle, texts, spans, normalize=True)
    rough = mluke.span_vectors(bundle, texts, spans, normalize=True, dtype="bfloat16")
    assert rough.dtype == np.float32 and next(bundle.model.parameters()).dtype == torch.bfloat16  # cast in place
    assert (exact * rough).sum(1).min() > 0.98


def test_place_moves_and_casts_in_place(tiny_demo):
    model = mluke.load(tiny_demo).model
    assert place(model, "cpu", "bf16") is model and next(model.parameters()).dtype == torch.bfloat16
    assert place(model) is model and next(model.parameters()).dtype == torch.bfloat16


def test_cli_device_and_dtype(tiny_demo, embedded_db_path):
    from typer.testing import CliRunner

    from mluke.cli import app

    runner = CliRunner()
    args = [
        "probe",
        "[X] is the capital of [Y].",
        "--model",
        str(tiny_demo),
        "--db",
        str(embedded_db_path),
        "--limit",
        "2",
    ]
    res = runner.invoke(app, [*args, "--device", "auto", "--dtype", "bf16"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, [*args, "--dtype", "int4"])
    assert res.exit_code == 1 and "expected one of" in str(res.exception)
    if not torch.cuda.is_available():
        res = runner.invoke(app, [*args, "--device", "cuda"])
        assert res.exit_code == 1 and "CUDA is not available" in str(res.exception)
