"""Tiny checkpoints in exactly the studio-ousia layout, built once per session."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

import kb
from tests.conftest import arithmetic_seed

#: the fixed part of XLM-R's config layout (special ids as fairseq numbers them), and the transformer shape of
#: every tiny test model
XLMR_LAYOUT = {"max_position_embeddings": 514, "type_vocab_size": 1, "layer_norm_eps": 1e-5}
XLMR_LAYOUT |= {"bos_token_id": 0, "pad_token_id": 1, "eos_token_id": 2}
TINY_SHAPE = dict(XLMR_LAYOUT, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
# the lite checkpoints' special-entity order, deliberately not [PAD]=0
LITE_SPECIALS = {"[MASK]": 0, "[UNK]": 1, "[PAD]": 2, "[MASK2]": 3}


@pytest.fixture(scope="session")
def spm_model(tmp_path_factory: pytest.TempPathFactory, embedded_db: kb.EntityDB) -> Path:
    """A small unigram sentencepiece model trained on multilingual names (XLM-R's special-id layout)."""
    import sentencepiece as spm

    folder = tmp_path_factory.mktemp("spm")
    lines = []
    for lang in kb.MLUKE_LANGUAGES:
        for (pid, l), template in sorted(embedded_db.templates(lang).items()):
            lines.append(template.replace("[X]", "").replace("[Y]", ""))
    for key in list(embedded_db.keys("country"))[:120]:
        e = embedded_db.entity(key)
        lines.extend(e.labels.values())
    corpus = folder / "corpus.txt"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    spm.SentencePieceTrainer.train(
        input=str(corpus),
        model_prefix=str(folder / "sentencepiece.bpe"),
        vocab_size=1500,
        model_type="unigram",
        character_coverage=0.9995,
        bos_id=1,
        eos_id=2,
        unk_id=0,
        pad_id=-1,
        num_threads=1,
        minloglevel=2,
    )
    return folder / "sentencepiece.bpe.model"


def write_tiny_checkpoint(
    directory: Path,
    spm_model: Path,
    *,
    entity_aware: bool = True,
    lite: bool = False,
    weights: str = "bin",
    drop: tuple[str, ...] = (),
    seed: int = 0,
) -> Path:
    """A random LukeForMaskedLM in the hub layout: config.json, pytorch_model.bin (no tied decoder),
    sentencepiece.bpe.model, added_tokens.json, entity_vocab.json with lite-order special ids.

    ``spm_model`` may also be an XLM-R ``tokenizer.json`` (fairseq ids, ``<mask>`` last), written as it is: a
    checkpoint that needs no sentencepiece training (e.g. :func:`mluke.demo.tokenizer.pruned_xlmr_tokenizer`'s)."""
    from transformers import LukeConfig, LukeForMaskedLM

    directory.mkdir(parents=True, exist_ok=True)
    if spm_model.suffix == ".json":
        from tokenizers import Tokenizer

        shutil.copy(spm_model, directory / "tokenizer.json")
        vocab_size = Tokenizer.from_file(str(spm_model)).get_vocab_size(with_added_tokens=False) + 2  # <ent>, <ent2>
    else:
        import sentencepiece as spm

        shutil.copy(spm_model, directory / "sentencepiece.bpe.model")
        n_spm = spm.SentencePieceProcessor(model_file=str(spm_model)).get_piece_size()
        vocab_size = n_spm + 4  # fairseq: +<pad>, +<mask>, then <ent>, <ent2>
    entity_vocab = dict(LITE_SPECIALS)
    if not lite:
        for i, (lang, title) in enumerate(
            [
                ("en", "Tokyo"),
                ("ja", "東京"),
                ("en", "Japan"),
                ("ja", "日本"),
                ("en", "Paris"),
                ("fr", "Paris"),
                ("en", "France"),
            ]
        ):
            entity_vocab[f"{lang}:{title}"] = (
                4 + {"Tokyo": 0, "東京": 0, "Japan": 1, "日本": 1, "Paris": 2, "France": 3}[title]
            )
    n_entities = max(entity_vocab.values()) + 1
    entities = {"entity_vocab_size": n_entities, "entity_emb_size": 16, "use_entity_aware_attention": entity_aware}
    config = LukeConfig(vocab_size=vocab_size, **entities, **TINY_SHAPE)
    torch.manual_seed(seed)
    model = LukeForMaskedLM(config)
    with torch.no_grad():  # make every row, bias and norm distinctive so ties and ids matter
        for p in model.parameters():
            p.normal_(0.0, 0.2)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    state.pop("lm_head.decoder.weight", None)  # as on the hub: the tie is implied
    state.pop("entity_predictions.decoder.weight", None)
    for key in drop:
        state.pop(key)
    if weights == "bin":
        torch.save(state, directory / "pytorch_model.bin")
    else:
        from safetensors.torch import save_file

        save_file(state, str(directory / "model.safetensors"))
    cfg = config.to_dict()
    cfg["architectures"] = ["LukeForMaskedLM"]
    (directory / "config.json").write_text(json.dumps(cfg, indent=2), encoding="utf-8")
    (directory / "added_tokens.json").write_text(json.dumps({"<ent>": vocab_size - 2, "<ent2>": vocab_size - 1}))
    (directory / "entity_vocab.json").write_text(json.dumps(entity_vocab, ensure_ascii=False), encoding="utf-8")
    (directory / "special_tokens_map.json").write_text(json.dumps({"mask_token": "<mask>"}))
    (directory / "tokenizer_config.json").write_text(
        json.dumps({"tokenizer_class": "MLukeTokenizer", "max_entity_length": 32})
    )
    return directory


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory: pytest.TempPathFactory, spm_model: Path) -> Path:
    return write_tiny_checkpoint(tmp_path_factory.mktemp("ckpt") / "mluke-tiny", spm_model, seed=arithmetic_seed() or 0)


def interrupt_at(run: Callable[[Callable[[int], None]], object], step: int) -> None:
    """Start ``run(on_step)`` (a fine-tuning run) and kill it, as Ctrl-C would, after its ``step``-th step."""

    class Stop(Exception):
        pass

    def stop_at(done: int) -> None:
        if done == step:
            raise Stop

    with pytest.raises(Stop):
        run(stop_at)


def assert_resumes(train: Callable[..., tuple[torch.nn.Module, list[dict]]], tmp_path: Path) -> None:
    """A 2-epoch run ``train(work, epochs=2, on_step=...)`` killed after its 3rd step and run again ends with the
    weights of an uninterrupted run, bit for bit, and a history of both epochs."""
    reference, _ = train(tmp_path / "ref", epochs=2)
    interrupt_at(lambda on_step: train(tmp_path / "run", epochs=2, on_step=on_step), 3)
    resumed, history = train(tmp_path / "run", epochs=2)
    assert [h["epoch"] for h in history] == [0, 1]
    assert_same_weights(reference, resumed)


def toy_fine_tune(
    model: torch.nn.Module,
    rows: list,
    work: Path,
    *,
    pad_id: int,
    learning_rate: float,
    epochs: int,
    save_every: int,
    on_step: Callable[[int], None] | None = None,
    **given: object,
) -> list[dict]:
    """A resumable fine-tuning run of ``model`` on toy ``rows`` (batches of 4, no warm-up) and its history;
    ``given``: the other :class:`~mluke.finetuning.FineTuner` arguments (``evaluate``, ``identity``, ``collate_fn``;
    the dev score is 0 unless ``evaluate`` is given)."""
    from mluke.finetuning import FineTuneConfig, FineTuner

    config = FineTuneConfig(learning_rate=learning_rate, batch_size=4, epochs=epochs, warmup=0.0, save_every=save_every)
    tuner = FineTuner(model, rows, config=config, work=work, pad_id=pad_id, **({"evaluate": lambda m: 0.0} | given))
    return tuner.train(progress=False, on_step=on_step)


def right_side(model: torch.nn.Module, batch: dict, gold: torch.Tensor) -> float:
    """The lowest probability a multi-label ``model`` gives the right side of any gold label (0/1) of ``batch``:
    above 0.5, every label is predicted right; the margin above it is what makes the predictions hold whatever the
    machine's arithmetic. As the ``evaluate`` of a toy run it keeps the epoch that separates the set best (a
    constant score would keep the first epoch's weights)."""
    training = model.training
    model.eval()
    with torch.no_grad():
        probs = torch.sigmoid(model(batch))
    model.train(training)
    return float(torch.where(gold.bool(), probs, 1 - probs).min())


def assert_same_weights(a: torch.nn.Module, b: torch.nn.Module) -> None:
    """Every tensor of the two models' state equal, bit for bit (named when not)."""
    for (name, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items()):
        assert torch.equal(x, y), name
