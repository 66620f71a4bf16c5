"""Using a KnowBert model with several knowledge bases: ``knowbert.json`` records each knowledge base's kb (what
``train_knowbert`` used), a file without it needs ``kbs=`` / ``--kb``, and fine-tuning rows and batches carry
every knowledge base's spans (word-mode probing and linking: tests/mluke/knowbert/test_word_model.py and
test_linking.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from kb.errors import InputFormatError, MlukeError, OptionError
from mluke.finetuning import new_model
from mluke.finetuning.inputs import collate, typing_rows
from mluke.finetuning.knowledge import attach_knowledge, kb_settings, open_knowbert_bundle
from mluke.finetuning.qa import qa_rows
from mluke.knowbert import EntityTable, KnowBertModel
from mluke.knowbert.kb_sources import kb_dbs, parse_kb_overrides
from mluke.knowbert.pieces import candidates_from_inputs
from mluke.knowbert.run import train_knowbert
from tests.conftest import Cli
from tests.mluke.knowbert.test_training import KEYS
from tests.mluke.knowbert.test_word_model import knowbert_dir, tiny_db_path  # noqa: F401  (fixtures)

GEO_KEYS = KEYS[:3]  # Q17, Q1490, Q1748


@pytest.fixture(scope="module")
def two_kb_dir(knowbert_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:  # noqa: F811
    """The word-model test's KnowBert folder with a second knowledge base "geo" (its own table and random layer,
    scaled up so that it shows), saved without recorded kbs (a file from before they were recorded)."""
    one = KnowBertModel.from_pretrained(knowbert_dir)
    geo = EntityTable.from_vectors(torch.randn(3, 8, generator=torch.Generator().manual_seed(2)), GEO_KEYS)
    torch.manual_seed(3)
    two = KnowBertModel(one.encoder, {"kb": one.entities, "geo": geo}, {"kb": one.config, "geo": one.config})
    two.kar.load_state_dict(one.kar.state_dict())
    with torch.no_grad():
        for p in two.knowledge_layer("geo").parameters():
            p.mul_(5)
    folder = two.save_pretrained(tmp_path_factory.mktemp("twokb") / "two")
    shutil.copytree(knowbert_dir / "tokenizer", folder / "tokenizer")
    return folder


def test_train_knowbert_records_each_knowledge_bases_kb(tiny_demo: Path, embedded_db_path: Path, tmp_path: Path):
    other = shutil.copy(embedded_db_path, tmp_path / "copy.sqlite")
    sizes = {"stage1_steps": 1, "stage2_steps": 1, "batch_size": 2, "device": "cpu"}
    out = train_knowbert(
        tmp_path / "run",
        model=tiny_demo,
        knowledge_bases=[f"wiki={other}", "geo=embedded"],
        languages=["en"],
        progress=False,
        **sizes,  # type: ignore[arg-type]
    )
    meta = json.loads((out / "knowbert.json").read_text())
    assert [(kb["name"], kb["db"]) for kb in meta["knowledge_bases"]] == [("wiki", str(other)), ("geo", None)]
    model = KnowBertModel.from_pretrained(out)
    assert model.kb_dbs == {"wiki": str(other), "geo": None}
    assert kb_dbs(model) == {"wiki": str(other), "geo": None}
    # --db is the first knowledge base's; --kb NAME=DB overrides any
    assert kb_dbs(model, "x.sqlite", {"geo": "y.sqlite"}) == {"wiki": "x.sqlite", "geo": "y.sqlite"}
    # a one-knowledge-base run records its --db too
    one = train_knowbert(tmp_path / "one", model=tiny_demo, db=other, languages=["en"], progress=False, **sizes)  # type: ignore[arg-type]
    [entry] = json.loads((one / "knowbert.json").read_text())["knowledge_bases"]
    assert entry["db"] == str(other)


def test_a_file_without_recorded_kbs_and_bad_recorded_kbs(two_kb_dir: Path, tiny_db_path: Path, tmp_path: Path):  # noqa: F811
    model = KnowBertModel.from_pretrained(two_kb_dir)
    assert model.kb_dbs == {}
    with pytest.raises(MlukeError, match=r"two/knowbert\.json: the knowledge base 'geo' records no kb .*--kb geo=DB"):
        kb_dbs(model, tiny_db_path)
    assert kb_dbs(model, tiny_db_path, {"geo": tiny_db_path}) == {"kb": tiny_db_path, "geo": tiny_db_path}
    assert kb_dbs(model, None, {"geo": None})["kb"] is None  # nothing recorded, nothing given: the embedded kb
    with pytest.raises(OptionError, match="no knowledge base wiki in the model; it has kb, geo"):
        kb_dbs(model, None, {"wiki": tiny_db_path})
    meta = json.loads((two_kb_dir / "knowbert.json").read_text())
    meta["knowledge_bases"][1]["db"] = 3
    broken = shutil.copytree(two_kb_dir, tmp_path / "broken")
    (broken / "knowbert.json").write_text(json.dumps(meta))
    with pytest.raises(InputFormatError, match=r"knowledge_bases\[1\]: 'db' must be a kb path or null"):
        KnowBertModel.from_pretrained(broken)
    meta["knowledge_bases"][1]["db"] = str(tiny_db_path)
    (broken / "knowbert.json").write_text(json.dumps(meta))
    recorded = KnowBertModel.from_pretrained(broken)
    assert kb_dbs(recorded, tiny_db_path) == {"kb": tiny_db_path, "geo": str(tiny_db_path)}
    assert recorded.save_pretrained(tmp_path / "again") and json.loads(
        (tmp_path / "again" / "knowbert.json").read_text()
    )["knowledge_bases"][1]["db"] == str(tiny_db_path)  # kept when saved again
    assert parse_kb_overrides(["geo=a.sqlite", "wiki=embedded"]) == {"geo": "a.sqlite", "wiki": None}
    for bad in (["geo"], ["geo=a", "geo=b"]):
        with pytest.raises(OptionError, match="expected NAME=DB|each knowledge base once"):
            parse_kb_overrides(bad)


def test_fine_tuning_rows_and_batches_carry_every_knowledge_base(two_kb_dir: Path, tiny_db_path: Path) -> None:  # noqa: F811
    bundle = open_knowbert_bundle(two_kb_dir)
    labels = ["location", "person"]
    with pytest.raises(MlukeError, match="the knowledge base 'geo' records no kb"):
        new_model(bundle, "typing", "knowbert", labels, settings={"knowbert": kb_settings(tiny_db_path)})
    settings = {"seed": 0, "knowbert": kb_settings(tiny_db_path, kbs={"geo": tiny_db_path})}
    model = new_model(bundle, "typing", "knowbert", labels, settings=settings)
    assert model.settings["knowbert"]["kbs"] == {"geo": str(tiny_db_path)}
    texts = ["The city of Tokyo is big .", "A man called Bob said hello ."]
    spans = [(12, 17), (13, 16)]
    rows = typing_rows(bundle.tokenizer, texts, spans, labels=[[1, 0], [0, 1]], langs=["en", "en"])
    tokyo, bob = attach_knowledge(model, bundle.tokenizer, rows)
    geo_rows = bundle.model.tables["geo"].key_to_row
    assert set(tokyo.knowledge.others) == {"geo"}
    geo = tokyo.knowledge.others["geo"]
    assert geo.spans == tokyo.knowledge.spans and geo.entity_ids[0][0] == geo_rows["Q1490"]  # its own table's row
    assert tokyo.knowledge.entity_ids[0][0] == bundle.model.tables["kb"].key_to_row["Q1490"]
    assert bob.knowledge.others["geo"].spans == []
    batch = collate([tokyo, bob], pad_id=bundle.tokenizer.pad_id)
    assert batch["kb_span_mask@geo"].tolist() == [[True], [False]]
    cands = candidates_from_inputs(batch, bundle.model.names)
    assert isinstance(cands, dict) and set(cands) == {"kb", "geo"}
    model.eval()
    first_only = {k: v for k, v in batch.items() if "@" not in k}
    assert not torch.equal(model.features_of(batch), model.features_of(first_only))  # the geo layer ran
    model.train()
    loss = torch.nn.functional.binary_cross_entropy_with_logits(model(batch), batch["labels"].float())
    loss.backward()
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in model.luke.knowledge_layer("geo").parameters())


def test_qa_rows_carry_every_knowledge_base_in_question_and_passage(two_kb_dir: Path, tiny_db_path: Path) -> None:  # noqa: F811
    bundle = open_knowbert_bundle(two_kb_dir)
    settings = {"seed": 0, "knowbert": kb_settings(tiny_db_path, kbs={"geo": tiny_db_path})}
    model = new_model(bundle, "qa", "knowbert", ["start", "end"], settings=settings)
    question, passage = "Where is Tokyo?", "Tokyo is in Japan."
    rows = qa_rows(bundle.tokenizer, [question], [passage], features="knowbert", answers=[(12, 17)], langs=["en"])
    [row] = attach_knowledge(model, bundle.tokenizer, rows)
    own, geo = row.knowledge, row.knowledge.others["geo"]
    assert own.char_spans == geo.char_spans == [(9, 14), (0, 5)]  # "Tokyo": the question's, then the passage's
    assert geo.spans == own.spans and geo.spans[0][1] < row.ids.index(bundle.tokenizer.eos_id) < geo.spans[1][0]
    geo_rows = bundle.model.tables["geo"].key_to_row
    assert [r[0] for r in geo.entity_ids] == [geo_rows["Q1490"]] * 2


def test_cli_options_take_kb(cli: Cli, two_kb_dir: Path, tiny_db_path: Path, tmp_path: Path) -> None:  # noqa: F811
    probe = cli.bind("probe", "The capital of [X] is [Y].", lang="en", db=tiny_db_path, model=two_kb_dir, mode="word")
    missing = probe()
    assert isinstance(missing.exception, MlukeError) and "--kb geo=DB" in str(missing.exception)
    shown = probe(kb=f"geo={tiny_db_path}")
    assert shown.exit_code == 0, shown.output
    finetune = cli.bind("finetune", "typing", features="knowbert", model=two_kb_dir, db=tiny_db_path, lang="en")
    data = tmp_path / "types.jsonl"
    lines = [
        {"sent": "The city of Tokyo is big .", "start": 12, "end": 17, "labels": ["location"]},
        {"sent": "A man called Bob said hello .", "start": 13, "end": 16, "labels": ["person"]},
    ]
    data.write_text("".join(json.dumps(x) + "\n" for x in lines))
    sizes = {"train": data, "dev": data, "epochs": "1", "batch_size": "2", "no_progress": True}
    refused = finetune("-o", tmp_path / "a", **sizes)
    assert isinstance(refused.exception, MlukeError) and "--kb geo=DB" in str(refused.exception)
    done = finetune("-o", tmp_path / "b", kb=f"geo={tiny_db_path}", **sizes)
    assert done.exit_code == 0, done.output
    saved = json.loads((tmp_path / "b" / "config.json").read_text())["mluke_transfer"]
    assert saved["settings"]["knowbert"]["kbs"] == {"geo": str(tiny_db_path)}
    res = cli("evaluate", "typing", tmp_path / "b", test=[f"en:{data}"], json=tmp_path / "r.json", no_progress=True)
    assert res.exit_code == 0, res.output  # the saved settings give "geo" its kb again
    word = cli("finetune", "typing", "--train", str(data), "--dev", str(data), "-o", str(tmp_path / "c"),
               "--kb", f"geo={tiny_db_path}")  # fmt: skip
    assert isinstance(word.exception, OptionError) and "only with --features knowbert" in str(word.exception)


def test_a_relative_kb_path_is_recorded_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Recorded relative, the path would be read against whatever folder the model is used from."""
    from mluke.knowbert.kb_sources import recorded_db

    monkeypatch.chdir(tmp_path)
    assert recorded_db("kbs/geo.sqlite") == str(tmp_path / "kbs" / "geo.sqlite")
    assert recorded_db(Path("geo.sqlite")) == str(tmp_path / "geo.sqlite")
    assert recorded_db("embedded") is None and recorded_db(None) is None
