"""End-to-end linking with a KnowBert model's integrated linker (``method="knowbert"``): a tiny model trained a
few dozen steps on a hand-made set links the right entities and says NULL where it should, through
:class:`mluke.KnowBertLinker`, :func:`mluke.link` and the ``mluke link`` command, with the other methods'
output fields; a plain mLUKE folder is refused with a clear error."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import kb
import mluke
from kb.errors import MlukeError
from kb.mentions import MentionIndex
from mluke.errors import CheckpointError
from mluke.knowbert.candidates import CandidateSelector
from mluke.linking.knowbert import KnowBertLinker, _resolve_overlaps
from mluke.models.tokenizer import MlukeTokenizer
from mluke.options import LinkOptions
from mluke.pretraining.corpus import Document
from mluke.results import LinkedMention
from tests.conftest import Cli, write_tiny_db
from tests.mluke.knowbert.test_training import new_model, trainer

pytestmark = pytest.mark.learned  # asserts a linker trained 150 steps: held by construction, rerun by CI at 1 thread

#: "Japanese" inside the "Japanese Airlines" links (an entity the kb lacks) is taught as NULL: a name overlapping
#: a link that is not it (:mod:`mluke.knowbert.candidates`); the language Q5287 is never the right entity here
TRAIN = [
    Document("en", "Tokyo is the capital of Japan.", [(0, 5, "Q1490"), (24, 29, "Q17")]),
    Document("en", "Copenhagen is the capital of Denmark.", [(0, 10, "Q1748"), (29, 36, "Q35")]),
    Document("en", "People in Japan like Denmark.", [(10, 15, "Q17"), (21, 28, "Q35")]),
    Document("en", "Japanese Airlines is a bank.", [(0, 17, "Q999")]),
    Document("en", "Fly Japanese Airlines to Denmark.", [(4, 21, "Q999"), (25, 32, "Q35")]),
    Document("ja", "東京都は日本の首都です。", [(0, 3, "Q1490"), (4, 6, "Q17")]),
]


@pytest.fixture(scope="module")
def db_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_db(tmp_path_factory.mktemp("kblink") / "tiny.sqlite")


@pytest.fixture(scope="module")
def index(db_path: Path) -> MentionIndex:
    """Names without statistics kept, so that "Japan" is found in English too."""
    return MentionIndex.build(kb.EntityDB(db_path), keep_unscored=True)


@pytest.fixture(scope="module")
def knowbert_dir(tiny_checkpoint: Path, index: MentionIndex, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A KnowBert model folder (model + tokenizer), its linker trained 150 steps on :data:`TRAIN`."""
    tok = MlukeTokenizer.from_pretrained(tiny_checkpoint)
    windows = CandidateSelector(tok, index, new_model(tiny_checkpoint).entities.key_to_row).documents(TRAIN)
    out = tmp_path_factory.mktemp("kbrun") / "run"
    t = trainer(tiny_checkpoint, tok, windows, out, stage1_steps=150, stage2_steps=0, learning_rate=3e-2)
    t.train(progress=False)
    return t.export()


@pytest.fixture(scope="module")
def linker(knowbert_dir: Path, db_path: Path, index: MentionIndex) -> KnowBertLinker:
    return KnowBertLinker(knowbert_dir, db_path, index=index)


def decisions(found: list[LinkedMention]) -> list[tuple[str, str | None]]:
    return [(m.surface, m.key) for m in found]


def test_links_the_right_entities_and_null_where_it_should(linker: KnowBertLinker) -> None:
    tokyo, japan = linker.link("Tokyo is the capital of Japan.", "en", method="knowbert")
    assert (tokyo.key, japan.key) == ("Q1490", "Q17")
    assert not tokyo.nil and tokyo.name == "Tokyo (city)" and tokyo.title == "Tokyo"
    assert 0.5 < tokyo.confidence <= 1 and tokyo.score == pytest.approx(math.log(tokyo.confidence))
    assert tokyo.prior == max(c.prior for c in linker.index.detect("Tokyo", "en")[0].candidates)  # p(e|m)
    assert decisions(linker.link("Copenhagen is the capital of Denmark.", "en", method="knowbert")) == [
        ("Copenhagen", "Q1748"),
        ("Denmark", "Q35"),
    ]
    japanese, tokyo = linker.link("Japanese Airlines flies to Tokyo.", "en", method="knowbert")  # not a training text
    assert japanese.nil and japanese.key is None and japanese.confidence < 0.5  # NULL
    assert japanese.name is not None and japanese.prior == 1.0  # the top candidate's name and prior are kept
    assert tokyo.key == "Q1490"
    assert decisions(linker.link(["東京都は日本の首都です。"], "ja", method="knowbert")[0]) == [
        ("東京都", "Q1490"),
        ("日本", "Q17"),
    ]


def test_nil_threshold_and_given_spans(linker: KnowBertLinker) -> None:
    text = "Tokyo is the capital of Japan."
    free = linker.link(text, "en", method="knowbert")
    strict = linker.link(text, "en", method="knowbert", nil_threshold=1.0)
    assert [m.confidence for m in strict] == [m.confidence for m in free]
    # NIL exactly below the threshold (a linker this sure can reach 1.0 in float arithmetic: that one stays linked)
    assert [m.nil for m in strict] == [m.confidence < 1.0 for m in free] and not any(m.nil for m in free)
    lowest = linker.link(text, "en", method="knowbert", nil_threshold=min(m.confidence for m in free))
    assert not any(m.nil for m in lowest)  # a confidence equal to the threshold is linked
    # gold spans: the same decisions; a span the kb does not know is NIL with confidence 0
    given = linker.link(text, "en", method="knowbert", spans=[(0, 5), (24, 29), (9, 12)])
    assert decisions(given) == [("Tokyo", "Q1490"), ("Japan", "Q17"), ("the", None)]
    assert given[2].nil and given[2].confidence == 0.0 and given[2].name is None
    with pytest.raises(MlukeError, match="calibration"):  # no calibration to fit: the linker's own probability
        linker.mention_features([text], [[]], "en")


def test_the_api_and_other_methods_agree_on_the_output_fields(
    linker: KnowBertLinker, knowbert_dir: Path, db_path: Path, tiny_checkpoint: Path, index: MentionIndex
) -> None:
    text = "Tokyo is the capital of Japan."
    ours = linker.link(text, "en", method="knowbert", candidates=True)
    plain = mluke.Linker(tiny_checkpoint, db_path, index=index).link(text, "en", method="prior", candidates=True)
    assert [(m.start, m.end) for m in ours] == [(m.start, m.end) for m in plain]
    assert [set(m.to_dict()) for m in ours] == [set(m.to_dict()) for m in plain]
    assert all(set(r) == set(p) for m, o in zip(plain, ours) for r, p in zip(o.candidates or [], m.candidates or []))
    tokyo = ours[0].candidates or []
    assert [r["key"] for r in tokyo] == ["Q1490", "Q1748"] and tokyo[0]["name"] == "Tokyo (city)"
    assert sum(r["model"] for r in tokyo) <= 1 + 1e-6  # the rest is NULL's probability (near 0 for a sure linker)
    assert tokyo[0]["model"] == ours[0].confidence
    # mluke.link(method="knowbert") reads the folder itself (the default index: names with statistics only)
    found = mluke.link("Tokyo is big.", "en", model=knowbert_dir, db=db_path, method="knowbert")
    assert decisions(found) == [("Tokyo", "Q1490")]


def test_overlapping_spans_keep_the_most_confident_link() -> None:
    def m(start: int, end: int, key: str | None, confidence: float) -> LinkedMention:
        return LinkedMention(start, end, "x", key, None, None, confidence, 0.0, 0.0, None, key is None)

    found = [m(0, 10, "A", 0.6), m(0, 5, "B", 0.9), m(6, 10, None, 0.95), m(12, 15, "C", 0.2), m(4, 7, "D", 0.1)]
    kept = _resolve_overlaps(found)
    assert [(x.key, x.nil) for x in kept] == [(None, True), ("B", False), (None, True), ("C", False), (None, True)]


def test_a_plain_mluke_folder_is_refused_with_how_to_make_one(
    tiny_checkpoint: Path, db_path: Path, index: MentionIndex
) -> None:
    with pytest.raises(CheckpointError, match="mluke knowbert train --model"):
        KnowBertLinker(tiny_checkpoint, db_path, index=index)
    with pytest.raises(CheckpointError, match="not a KnowBert model"):
        mluke.link("Tokyo is big.", "en", model=tiny_checkpoint, db=db_path, method="knowbert")
    with pytest.raises(CheckpointError, match="an mLUKE model, not a KnowBert one"):
        KnowBertLinker(mluke.load(tiny_checkpoint), db_path, index=index)
    with pytest.raises(MlukeError, match="KnowBert model folder"):  # a plain Linker asked for knowbert
        mluke.Linker(tiny_checkpoint, db_path, index=index).link("Tokyo is big.", "en", method="knowbert")


def test_the_cli_links_writes_json_lines_and_refuses_a_plain_folder(
    cli: Cli, knowbert_dir: Path, db_path: Path, tiny_checkpoint: Path, tmp_path: Path
) -> None:
    link = cli.bind("link", "-", lang="en", db=db_path, method="knowbert", no_progress=True)
    text = "Tokyo is big.\nNothing known here.\n"
    shown = link(model=knowbert_dir, input=text, candidates=True)
    assert shown.exit_code == 0, shown.output
    assert "Q1490" in shown.output and "Tokyo" in shown.output
    out = tmp_path / "out.jsonl"
    written = link(model=knowbert_dir, input=text, jsonl=out, candidates=True)
    assert written.exit_code == 0, written.output
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    api = mluke.link(text.splitlines(), "en", model=knowbert_dir, db=db_path, method="knowbert", candidates=True)
    assert [r["mentions"] for r in records] == [[m.to_dict() for m in found] for found in api]
    assert [LinkedMention(**d) for d in records[0]["mentions"]] == api[0]  # JSON round trip
    without = link(input=text)
    assert isinstance(without.exception, MlukeError) and "mluke knowbert train" in without.exception.for_cli()
    refused = link(model=tiny_checkpoint, input=text)
    assert isinstance(refused.exception, CheckpointError)
    message = refused.exception.for_cli()
    assert "not a KnowBert model" in message and "mluke knowbert train" in message


def test_evaluation_compares_knowbert_with_another_linker(
    linker: KnowBertLinker, db_path: Path, tiny_checkpoint: Path, index: MentionIndex, tmp_path: Path
) -> None:
    from probes import GoldMention, LinkDoc, evaluate_linking
    from probes.linking_eval import eval_link

    gold_a = (GoldMention(0, 5, "Tokyo", "Q1490"), GoldMention(24, 29, "Japan", "Q17"))
    docs = [
        LinkDoc("a", "en", "Tokyo is the capital of Japan.", gold_a),
        LinkDoc("b", "en", "Japanese Airlines flies to Tokyo.", (GoldMention(27, 32, "Tokyo", "Q1490"),)),
    ]
    plain = mluke.Linker(tiny_checkpoint, db_path, index=index)
    report = evaluate_linking(docs, {"knowbert": linker, "prior": plain}, progress=False)
    assert report.methods == ("knowbert", "prior")
    ours, prior = report.row("en", "knowbert"), report.row("en", "prior")
    assert (ours["in_kb"], ours["correct"], ours["accuracy"]) == (3, 3, 1.0)  # on the gold spans
    # end to end: KnowBert says NULL for "Japanese" (not a gold mention); the prior links it
    assert (ours["detected"], ours["true_positives"], ours["precision"], ours["recall"]) == (3, 3, 1.0, 1.0)
    assert (prior["detected"], prior["true_positives"], prior["precision"], prior["f1"]) == (4, 3, 0.75, 6 / 7)
    with pytest.raises(MlukeError, match="no linker for method combined"):
        evaluate_linking(docs, {"knowbert": linker}, methods=["knowbert", "combined"], progress=False)
    with pytest.raises(MlukeError, match="knowbert_model"):
        eval_link(tmp_path, methods=["knowbert", "prior"], db=db_path)


def test_long_texts_and_streams(linker: KnowBertLinker) -> None:
    text = " ".join(["Tokyo is the capital of Japan."] * 40)  # more word pieces than the encoder reads at once
    pieces = len(linker.selector.encode([text], "en")[0].input_ids)
    assert pieces == linker.tokenizer.max_length  # the selector's one-window view is cut ...
    found = linker.link(text, "en", method="knowbert")  # ... the linker reads every window
    assert [m.key for m in found] == ["Q1490", "Q17"] * 40
    options = LinkOptions(method="knowbert", chunk_chars=300, window_chars=100, segment_windows=2)
    [(_, streamed)] = list(linker.link_iter([text], "en", options=options))  # in segments of a long text
    assert [(m.start, m.end, m.key) for m in streamed] == [(m.start, m.end, m.key) for m in found]


def write_denmark_db(path: Path) -> Path:
    """A kb that knows Denmark only: none of the names of the texts below are found in it."""
    with kb.EntityDB.create(path, provenance={"builder": "tests"}) as w:
        w.add_languages(["en"])
        w.add_entity("Q35", "country")
        w.add_title("en", "Denmark", "Q35")
        w.add_label("Q35", "en", "Denmark")
    return path


def test_a_model_with_two_knowledge_bases_links_with_the_one_named(
    cli: Cli, linker: KnowBertLinker, knowbert_dir: Path, db_path: Path, index: MentionIndex, tmp_path: Path
) -> None:
    import shutil

    from kb.errors import OptionError
    from mluke.knowbert import KnowBertModel

    trained = KnowBertModel.from_pretrained(knowbert_dir)
    tables = {"fresh": trained.entities, "trained": trained.entities}
    two = KnowBertModel(trained.encoder, tables, {"fresh": trained.config, "trained": trained.config}).eval()
    two.knowledge_layer("trained").load_state_dict(trained.kar.state_dict())  # "fresh" keeps its random weights
    folder = two.save_pretrained(tmp_path / "two")  # no kb recorded: a file from before kbs were recorded
    shutil.copytree(knowbert_dir / "tokenizer", folder / "tokenizer")
    text = "Tokyo is the capital of Japan. Japanese Airlines flies to Tokyo."
    expected = linker.link(text, "en", method="knowbert", candidates=True)
    with pytest.raises(MlukeError, match=r"two/knowbert\.json: the knowledge base 'trained' records no kb .*'db'"):
        KnowBertLinker(folder, db_path, index=index, knowledge_base="trained")
    # "fresh" runs first (same layer, first in the model's order); from a kb that finds none of the text's names
    # it gets no candidates, is skipped, and "trained" decides as the one-knowledge-base model does
    denmark = write_denmark_db(tmp_path / "denmark.sqlite")
    alone = KnowBertLinker(
        folder, db_path, kbs={"fresh": denmark, "trained": db_path}, index=index, knowledge_base="trained"
    )
    assert alone.link(text, "en", method="knowbert", candidates=True) == expected
    # with its own kb's candidates (the linker's kb: --db), "fresh"'s layer reads the text's spans and its random
    # weights change what "trained" decides from
    named = KnowBertLinker(folder, db_path, kbs={"trained": db_path}, index=index, knowledge_base="trained")
    seen: list = []
    hook = named.model.knowledge_layer("fresh").register_forward_pre_hook(lambda _m, args: seen.append(args[1]))
    both = named.link(text, "en", method="knowbert", candidates=True)
    hook.remove()
    assert both != expected
    [fresh_spans] = seen
    rows = two.tables["fresh"].key_to_row
    assert int(fresh_spans.span_mask.sum()) == 4  # Tokyo, Japan, Japanese, Tokyo
    assert rows["Q1490"] in fresh_spans.entity_ids[0][fresh_spans.span_mask[0]][:, 0].tolist()
    default = KnowBertLinker(folder, db_path, index=index)  # the first knowledge base decides: the untrained "fresh"
    with pytest.raises(MlukeError, match="'trained' records no kb"):  # a per-call choice needs its kb too
        default.link(text, "en", method="knowbert", knowledge_base="trained")
    default = KnowBertLinker(folder, db_path, kbs={"trained": db_path}, index=index)
    assert default.link(text, "en", method="knowbert", knowledge_base="trained", candidates=True) == both
    assert default.link(text, "en", method="knowbert", candidates=True) != both
    with pytest.raises(OptionError, match="the model's knowledge bases are fresh, trained"):
        default.link(text, "en", method="knowbert", knowledge_base="geo")
    with pytest.raises(OptionError, match="no knowledge base geo in the model; it has fresh, trained"):
        KnowBertLinker(folder, db_path, kbs={"geo": db_path})
    with pytest.raises(OptionError, match="only method 'knowbert'"):
        LinkOptions(method="prior", knowledge_base="trained")
    link = cli.bind("link", "-", lang="en", db=db_path, method="knowbert", no_progress=True, model=folder)
    missing = link(input="Tokyo is big.\n", knowledge_base="trained")
    assert isinstance(missing.exception, MlukeError) and "--kb trained=DB" in str(missing.exception)
    shown = link(input="Tokyo is big.\n", knowledge_base="trained", kb=f"trained={db_path}", jsonl="-")
    assert shown.exit_code == 0, shown.output
    [record] = [json.loads(line) for line in shown.output.splitlines() if line.startswith("{")]
    same = KnowBertLinker(folder, db_path, kbs={"trained": db_path}, knowledge_base="trained")  # the default index
    assert [m["key"] for m in record["mentions"]] == [
        m.key for m in same.link("Tokyo is big.", "en", method="knowbert")
    ]
    one_call = mluke.link(
        "Tokyo is big.",
        "en",
        model=folder,
        db=db_path,
        method="knowbert",
        knowledge_base="trained",
        kbs={"trained": db_path},
    )
    assert one_call == same.link("Tokyo is big.", "en", method="knowbert")  # mluke.link(kbs=...) builds the same linker
