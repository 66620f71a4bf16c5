"""dtype="int8": the encoder's linear layers quantized to dynamic int8 for CPU inference. Probing, linking, span
vectors and fine-tuned task inference run and stay close to fp32 on the tiny demo model; training, GPUs and casts
of a quantized model are refused with what to use instead."""

from pathlib import Path

import numpy as np
import pytest
import torch

import mluke
from mluke.models.devices import check_trainable, is_int8, place, resolve_dtype

DATA = Path(__file__).parents[1] / "probes" / "transfer" / "data"


def linear_kinds(model: torch.nn.Module) -> set[str]:
    """The class names of the model's linear layers inside and outside its encoder."""
    return {
        f"{'encoder' if '.encoder.' in n else 'other'}:{type(m).__name__}"
        for n, m in model.named_modules()
        if "Linear" in type(m).__name__
    }


def test_int8_quantizes_the_encoder_only(tiny_demo):
    assert resolve_dtype("int8") is resolve_dtype("qint8") is torch.qint8
    model = mluke.load(tiny_demo).model
    assert not is_int8(model)
    assert place(model, "auto", "int8") is model and is_int8(model)
    kinds = linear_kinds(model)
    assert "encoder:Linear" in kinds  # torch.ao's dynamic Linear keeps the name; it is another class
    assert all(not isinstance(m, torch.nn.Linear) for n, m in model.named_modules() if ".encoder." in n)
    assert isinstance(model.entity_predictions.transform.dense, torch.nn.Linear)  # heads stay float32
    assert place(model, None, "int8") is model and place(model, "cpu") is model  # again: unchanged
    with pytest.raises(mluke.MlukeError, match="int8-quantized.*load it again"):
        place(model, None, "bf16")


def test_int8_refusals(tiny_demo):
    model = mluke.load(tiny_demo).model
    with pytest.raises(mluke.MlukeError, match="int8 runs on the CPU only.*--dtype bf16"):
        place(model, "cuda", "int8")
    with pytest.raises(mluke.MlukeError, match="no transformer encoder"):
        place(torch.nn.Sequential(torch.nn.Linear(2, 2)), None, "int8")
    check_trainable(model, "fine-tuning")  # float32: trainable
    place(model, None, "int8")
    with pytest.raises(mluke.MlukeError, match="fine-tuning: the model is int8-quantized.*train from the float32"):
        check_trainable(model, "fine-tuning")


def test_int8_probe_link_and_spans_agree_with_fp32(tiny_demo, embedded_db):
    template = "[X] is the capital of [Y]."
    full = mluke.probe(template, "en", model=tiny_demo, db=embedded_db, top_k=1).to_pandas()
    small = mluke.probe(template, "en", model=tiny_demo, db=embedded_db, top_k=1, dtype="int8").to_pandas()
    assert len(full) == len(small) > 20
    assert (full["prediction"].values == small["prediction"].values).mean() >= 0.9
    assert np.isfinite(small["score"].values).all() and small["score"].dtype == np.float64
    for text, lang in [("Ich wohne in Berlin, der Hauptstadt von Deutschland.", "de"), ("Paris is in France.", "en")]:
        keys = [m.key for m in mluke.link(text, lang, model=tiny_demo, db=embedded_db)]
        assert keys and keys == [m.key for m in mluke.link(text, lang, model=tiny_demo, db=embedded_db, dtype="int8")]
    bundle = mluke.load(tiny_demo)
    texts, spans = ["Paris is in France.", "京都は日本の都市です。"], [[(0, 5), (12, 18)], [(0, 2), (3, 5)]]
    exact = mluke.span_vectors(bundle, texts, spans, normalize=True)
    rough = mluke.span_vectors(bundle, texts, spans, normalize=True, dtype="int8")
    assert rough.dtype == np.float32 and is_int8(bundle.model)  # quantized in place
    assert (exact * rough).sum(1).min() > 0.98


def test_int8_transfer_inference_agrees_and_training_is_refused(tiny_demo, tmp_path):
    from mluke.finetuning import FineTuneConfig, load_transfer
    from mluke.finetuning.predict import predict_spans
    from probes.transfer import evaluate, finetune
    from probes.transfer.readers.ner import read_ner

    out, train = tmp_path / "ner", DATA / "wikiann.tsv"
    config = FineTuneConfig(learning_rate=1e-3, batch_size=4, epochs=2, max_entities=32)
    finetune("ner", train, train, output=out, model=tiny_demo, config=config, progress=False)
    words = [s.words for s in read_ner(train, lang="en").sentences]
    model, tok = load_transfer(out)
    full = predict_spans(model, tok, words, ["en"] * len(words))
    place(model, None, "int8")
    small = predict_spans(model, tok, words, ["en"] * len(words))
    assert sum(map(len, full)) > 0 and sum(a == b for a, b in zip(full, small, strict=True)) >= 0.8 * len(words)
    a = evaluate("ner", out, [("en", train)], progress=False).rows[0]
    b = evaluate("ner", out, [("en", train)], progress=False, dtype="int8").rows[0]
    assert a["examples"] == b["examples"] and abs(a["f1"] - b["f1"]) <= 0.1
    quantized = mluke.open_model(tiny_demo, dtype="int8")
    with pytest.raises(mluke.MlukeError, match="fine-tuning: the model is int8-quantized"):
        finetune("ner", train, train, output=tmp_path / "again", model=quantized, config=config, progress=False)


def test_cli_int8_and_its_refusals(tiny_demo, embedded_db_path, cli, tmp_path):
    res = cli("probe", "[X] is the capital of [Y].", model=tiny_demo, db=embedded_db_path, limit="2", dtype="int8")
    assert res.exit_code == 0, res.output
    res = cli("probe", "[X] is the capital of [Y].", model=tiny_demo, device="cuda", dtype="int8")
    assert res.exit_code == 1 and "--device cuda --dtype int8: use --device cpu" in str(res.exception)
    for args in (["pretrain", "--preset", "tiny"], ["knowbert", "train", "-o", str(tmp_path / "kb")]):
        res = cli(*args, dtype="int8")
        assert res.exit_code == 1 and "trains in float32" in str(res.exception) and "mluke link" in str(res.exception)
    res = cli("finetune", "ner", "-o", tmp_path / "x", train="a", dev="b", dtype="int8")
    assert res.exit_code == 1 and "--dtype int8: mluke finetune trains in float32" in str(res.exception)
