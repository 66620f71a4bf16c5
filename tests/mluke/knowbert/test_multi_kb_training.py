"""KnowBert training with two knowledge bases (KnowBert-W+W style): windows carrying both knowledge bases' spans,
masking over both, both linking losses falling, a resume that is bit-identical, and ``--kb`` on the command line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from kb.errors import MlukeError, OptionError
from kb.mentions import MentionIndex
from mluke.knowbert import EntityTable, KnowBertConfig, KnowBertModel, MultiSelector, mask_window
from mluke.knowbert.candidates import CandidateSelector, Window, collate, collate_knowledge
from mluke.knowbert.masking import MaskingOptions, MaskVocabulary
from mluke.knowbert.run import KnowledgeBaseSource, knowledge_base_sources
from mluke.knowbert.training import KnowBertTrainConfig, KnowBertTrainer
from mluke.models.tokenizer import MlukeTokenizer
from tests.conftest import Cli
from tests.mluke.knowbert.test_candidates import kb_index, tok  # noqa: F401  (fixtures)
from tests.mluke.knowbert.test_training import DEFAULTS, DOCS, KEYS, LAYER, params

#: the second knowledge base: fewer entities, another dimension, its layer after layer 2 (the first's after 1)
GEO_KEYS = ["Q35", "Q17", "Q5287"]
GEO = KnowBertConfig(**{**LAYER.to_dict(), "kar_layer": 2})


def two_kb_model(checkpoint: Path) -> KnowBertModel:
    torch.manual_seed(0)
    wiki = EntityTable.from_vectors(torch.randn(len(KEYS), 16, generator=torch.Generator().manual_seed(1)), KEYS)
    geo = EntityTable.from_vectors(torch.randn(len(GEO_KEYS), 8, generator=torch.Generator().manual_seed(2)), GEO_KEYS)
    return KnowBertModel.from_encoder(
        checkpoint, entities={"wiki": wiki, "geo": geo}, config={"wiki": LAYER, "geo": GEO}
    )


def selector(model: KnowBertModel, tokenizer: MlukeTokenizer, index: MentionIndex) -> MultiSelector:
    return MultiSelector({n: CandidateSelector(tokenizer, index, model.tables[n].key_to_row) for n in model.names})


@pytest.fixture
def setup(tok: MlukeTokenizer, kb_index: MentionIndex, tiny_checkpoint: Path) -> tuple[KnowBertModel, list[Window]]:  # noqa: F811
    model = two_kb_model(tiny_checkpoint)
    return model, selector(model, tok, kb_index).documents(DOCS)


def test_windows_carry_every_knowledge_base(setup, tok: MlukeTokenizer, kb_index: MentionIndex) -> None:  # noqa: F811
    model, windows = setup
    geo_rows = model.tables["geo"].key_to_row
    [first] = [w for w in windows if w.lang == "en"][:1]
    assert set(first.others) == {"geo"}
    geo = first.others["geo"]
    assert geo.char_spans and all(rows for rows in geo.entity_ids)
    assert {r for rows in geo.entity_ids for r in rows} <= set(geo_rows.values())
    # "Japan" (Q17) is a geo candidate, "Tokyo" (Q1490) is not in geo's table: only wiki has a span over it
    assert (24, 29) in geo.char_spans and (0, 5) in first.char_spans and (0, 5) not in geo.char_spans
    assert geo.gold[geo.char_spans.index((24, 29))] == geo.entity_ids[geo.char_spans.index((24, 29))].index(
        geo_rows["Q17"]
    )
    # with one selector, MultiSelector gives exactly the CandidateSelector's windows
    alone = CandidateSelector(tok, kb_index, model.tables["wiki"].key_to_row).documents(DOCS)
    single = MultiSelector({"wiki": CandidateSelector(tok, kb_index, model.tables["wiki"].key_to_row)}).documents(DOCS)
    assert single == alone
    ids, _, cands = collate_knowledge(windows, tok.pad_id, model.names)
    same = collate(windows, tok.pad_id)
    assert torch.equal(ids, same[0]) and torch.equal(cands["wiki"].entity_ids, same[2].entity_ids)
    assert cands["geo"].entity_ids.shape[:2] == (len(windows), max(len(w.others["geo"].spans) for w in windows))
    with pytest.raises(ValueError, match=r"knowledge base\(s\) \['geo'\]"):
        collate_knowledge(windows, tok.pad_id, ["wiki"])


def test_masking_masks_the_spans_of_every_knowledge_base(setup, tok: MlukeTokenizer) -> None:  # noqa: F811
    model, windows = setup
    vocab = MaskVocabulary.from_tokenizer(tok)
    wiki_mask, geo_mask = model.tables["wiki"].mask_row, model.tables["geo"].mask_row
    hits = 0
    for seed in range(20):
        for w in windows:
            m = mask_window(w, np.random.default_rng(seed), vocab, wiki_mask, MaskingOptions(word_prob=0.3),
                            other_mask_rows={"geo": geo_mask})  # fmt: skip
            masked = [i for i, label in enumerate(m.labels) if label != -100]
            for (s, e), rows, gold in zip(m.others["geo"].spans, m.others["geo"].entity_ids, m.others["geo"].gold):
                over = [i for i in masked if s <= i <= e]
                if over:  # a geo span over a masked piece: geo's [MASK], no supervision, the whole span masked
                    hits += 1
                    assert rows == [geo_mask] and gold == -100 and over == list(range(s, e + 1))
            assert w.others["geo"].entity_ids != [] and m.others["geo"] is not w.others["geo"]
    assert hits > 0
    with pytest.raises(ValueError, match="no \\[MASK\\] row given for knowledge base\\(s\\) \\['geo'\\]"):
        mask_window(windows[0], np.random.default_rng(0), vocab, wiki_mask)


def two_kb_trainer(checkpoint: Path, windows: list[Window], tokenizer: MlukeTokenizer, out: Path, **settings: object):
    config = KnowBertTrainConfig(output=str(out), device="cpu", **{**DEFAULTS, **settings})  # type: ignore[arg-type]
    return KnowBertTrainer(two_kb_model(checkpoint), tokenizer, windows, config)


@pytest.mark.learned
def test_both_linking_losses_fall(setup, tiny_checkpoint: Path, tok: MlukeTokenizer, tmp_path: Path) -> None:  # noqa: F811
    _, windows = setup
    t = two_kb_trainer(tiny_checkpoint, windows, tok, tmp_path / "run", stage1_steps=40, stage2_steps=0,
                       learning_rate=1e-2)  # fmt: skip

    def losses() -> dict[str, float]:
        t.model.eval()
        with torch.no_grad():
            ids, mask, cands = collate_knowledge(windows, tok.pad_id, t.model.names)
            out = t.model(ids, mask, cands)
        assert out.linking_loss is not None
        torch.testing.assert_close(out.linking_loss, out.kb_losses["wiki"] + out.kb_losses["geo"])
        return {n: float(v) for n, v in out.kb_losses.items()}

    before = losses()
    t.train(progress=False)
    after = losses()
    assert all(after[n] < 0.5 * before[n] for n in ("wiki", "geo")), (before, after)
    log = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert log[0]["linking_loss"] == pytest.approx(log[0]["linking_loss_wiki"] + log[0]["linking_loss_geo"])
    again = KnowBertModel.from_pretrained(t.export())
    assert again.names == ["wiki", "geo"] and again.kar_layers == {"wiki": 1, "geo": 2}
    with pytest.raises(MlukeError, match=r"knowledge base\(s\) \['geo'\], which the model does not have"):
        KnowBertTrainer(KnowBertModel(t.model.encoder, t.model.tables["wiki"], LAYER), tok, windows, t.config)


def test_resume_with_two_knowledge_bases_is_bit_identical(
    setup,
    tiny_checkpoint: Path,
    tok: MlukeTokenizer,  # noqa: F811
    tmp_path: Path,
) -> None:
    _, windows = setup
    settings = {"stage1_steps": 2, "stage2_steps": 4, "save_every": 3, "lm_share": 0.5, "batch_size": 2}
    straight = two_kb_trainer(tiny_checkpoint, windows, tok, tmp_path / "a", **settings)
    straight.train(progress=False)

    class Killed(Exception):
        pass

    def on_step(done: int) -> None:
        if done == 5:
            raise Killed  # the run restarts from step 3's checkpoint, inside stage 2

    with pytest.raises(Killed):
        two_kb_trainer(tiny_checkpoint, windows, tok, tmp_path / "b", **settings).train(progress=False, on_step=on_step)
    resumed = two_kb_trainer(tiny_checkpoint, windows, tok, tmp_path / "b", **settings)
    assert resumed.resume() and resumed.step == 3
    resumed.train(progress=False)
    a, b = params(straight.model), params(resumed.model)
    assert a.keys() == b.keys() and any(k.startswith("extra_kars.geo.") for k in a)
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_kb_options_parse() -> None:
    assert KnowledgeBaseSource.parse("geo=geo.sqlite:geo.safetensors") == KnowledgeBaseSource(
        "geo", "geo.sqlite", "geo.safetensors"
    )
    assert KnowledgeBaseSource.parse("wiki=embedded") == KnowledgeBaseSource("wiki")
    assert knowledge_base_sources(["a=x.sqlite", "b=y.sqlite"], ["b=3"])[1].kar_layer == 3
    with pytest.raises(OptionError, match="kb=.geo.: expected NAME=DB"):
        KnowledgeBaseSource.parse("geo")
    with pytest.raises(OptionError, match=r"one of the knowledge bases \(a\)"):
        knowledge_base_sources(["a=x.sqlite"], ["c=2"])
    with pytest.raises(OptionError, match="each knowledge base name once"):
        knowledge_base_sources(["a=x.sqlite", "a=y.sqlite"])


def test_cli_trains_two_knowledge_bases(cli: Cli, tiny_demo: Path, embedded_db_path: Path, tmp_path: Path) -> None:
    result = cli(
        "knowbert", "train", "-o", str(tmp_path / "run"), "--model", str(tiny_demo), "--languages", "en",
        "--kb", f"wiki={embedded_db_path}", "--kb", f"geo={embedded_db_path}", "--kb-layer", "geo=1",
        "--stage1-steps", "2", "--stage2-steps", "1", "--batch-size", "2", "--device", "cpu", "--no-progress",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    model = KnowBertModel.from_pretrained(tmp_path / "run" / "model")
    assert model.names == ["wiki", "geo"] and model.kar_layers == {"wiki": 1, "geo": 1}  # the tiny demo: 1 layer
    stats = json.loads((tmp_path / "run" / "selection.json").read_text())
    assert set(stats) == {"wiki", "geo"} and stats["geo"]["gold_found"] > 0
    log = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert "linking_loss_geo" in log[0]
    deep = cli("knowbert", "train", "-o", str(tmp_path / "y"), "--model", str(tiny_demo), "--kb", "a=embedded",
               "--kb-layer", "a=2")  # fmt: skip
    assert isinstance(deep.exception, OptionError) and "--kb: kar_layer 2 is past the encoder's 1 layers" in (
        deep.exception.for_cli()
    )
    both = cli("knowbert", "train", "-o", str(tmp_path / "x"), "--kb", "a=embedded", "--db", str(embedded_db_path))
    assert isinstance(both.exception, OptionError) and "leave out --db and --entities" in both.exception.for_cli()
