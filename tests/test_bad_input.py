"""Bad inputs from the "When things go wrong" table (docs/troubleshooting.md) that no other test checks exactly."""

import json

import pytest
import torch
from typer.testing import CliRunner

import kb
import mluke
from mluke.cli import app

CONFIG = {
    "vocab_size": 16,
    "entity_vocab_size": 8,
    "hidden_size": 8,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "intermediate_size": 16,
    "entity_emb_size": 8,
}


def test_checkpoint_without_config_json(tmp_path):
    folder = tmp_path / "ck"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"")
    with pytest.raises(kb.InputFormatError, match=r"ck: no config\.json \(expected an mLUKE checkpoint folder\)"):
        mluke.load(folder)


class _Payload:
    """Unpickling this calls open(marker, "w"): what a hostile pytorch_model.bin could do with any function."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return open, (self.marker, "w")


def test_weights_holding_python_objects_are_refused_unread(tmp_path):
    folder = tmp_path / "ck"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(CONFIG))
    marker = tmp_path / "was-unpickled"
    torch.save(
        {"luke.embeddings.word_embeddings.weight": torch.zeros(16, 8), "x": _Payload(marker)},
        folder / "pytorch_model.bin",
    )
    with pytest.raises(
        kb.InputFormatError,
        match=r"pytorch_model\.bin: cannot read the weights \(UnpicklingError: "
        r"Weights only load failed",
    ):
        mluke.load(folder)
    assert not marker.exists()  # refused, not run
    torch.load(folder / "pytorch_model.bin", weights_only=False)  # the payload is live when loaded unsafely
    assert marker.exists()


def test_existing_output_is_refused_before_any_work(tmp_path):
    src = tmp_path / "in.txt"
    src.write_text("Paris\n")
    out = tmp_path / "out.jsonl"
    out.write_text("mine\n")
    # a model that does not exist: the refusal comes first, so nothing was loaded
    res = CliRunner().invoke(app, ["link", str(src), "--model", str(tmp_path / "no-model"), "--jsonl", str(out)])
    assert res.exit_code == 1 and isinstance(res.exception, kb.OutputExistsError)
    assert res.exception.for_cli() == f"{out} already exists; pass --overwrite to replace it"
    assert out.read_text() == "mine\n"


def test_link_input_that_is_not_utf8_is_refused_before_the_model_loads(tmp_path):
    src = tmp_path / "latin1.txt"
    src.write_bytes("Paris\nCaf\xe9\n".encode("latin-1"))
    # a model that does not exist: the input is refused first, so nothing was loaded
    res = CliRunner().invoke(
        app, ["link", str(src), "--model", str(tmp_path / "no-model"), "--jsonl", str(tmp_path / "o.jsonl")]
    )
    assert res.exit_code == 1 and isinstance(res.exception, kb.InputFormatError)
    assert f"{src}, line 2: bytes that are not UTF-8" in str(res.exception) and not (tmp_path / "o.jsonl").exists()
