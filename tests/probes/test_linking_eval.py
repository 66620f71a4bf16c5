"""probes.linking_eval on a small hand-written folder in the Mewsli-9 layout (never the real data)."""

import hashlib
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import kb
from mluke.cli import app
from mluke.linking.linker import Linker
from probes import GoldMention, LinkDoc, LinkingReport, eval_link, evaluate_linking, read_mewsli
from probes.linking_eval import METRIC_COLUMNS, LinkingSet
from tests.probes.conftest import FRANCE, JAPAN, PARIS, TOKYO

LONDON, VALENCIA_ES = "geonames:2643743", "geonames:2509954"  # London has 2 candidates, Valencia 3 (prior: Venezuela's)
NOT_IN_KB = "Q999999999"

DOCS_HEADER = "docid\ttitle\tcurid\trevid\turl\ttext_md5\n"
MENTIONS_HEADER = "docid\tposition\tlength\tmention\turl\tlang\tqid\tqid_in_refs\tfreq_bin\n"

# (docid, text or None for a document without text file, [(surface, key)] in text order)
EN = [
    (
        "en-1",
        "Paris is the capital of France. Valencia and London are big cities.",
        [("Paris", PARIS), ("France", FRANCE), ("Valencia", VALENCIA_ES), ("London", LONDON)],
    ),
    (
        "en-2",
        "Tokyo is in Japan.\r\nAtlantis is not.",  # \r\n: offsets count every character
        [("Tokyo", TOKYO), ("Japan", JAPAN), ("Atlantis", NOT_IN_KB)],
    ),
    ("en-3", None, [("Paris", PARIS)]),
]
JA = [
    (
        "ja-1",
        "東京は日本の首都です。パリはフランスの首都です。",
        [("東京", TOKYO), ("日本", JAPAN), ("パリ", PARIS), ("フランス", FRANCE)],
    ),
    ("ja-2", "ロンドンとバレンシアは都市です。", [("ロンドン", LONDON), ("バレンシア", VALENCIA_ES)]),
    ("ja-3", "何もない文書です。", []),
]


def _mention_line(docid: str, pos: object, length: object, surface: str, key: str, lang: str) -> str:
    return f"{docid}\t{pos}\t{length}\t{surface}\thttps://{lang}.wikipedia.org/wiki/{surface}\t{lang}\t{key}\t1\t3\n"


def write_mewsli(dataset: Path) -> Path:
    """dataset/<lang>/{docs.tsv, mentions.tsv, text/<docid>}, with a few broken rows in en/mentions.tsv."""
    for lang, docs in (("en", EN), ("ja", JA)):
        folder = dataset / lang
        (folder / "text").mkdir(parents=True)
        docs_tsv, mentions_tsv = [DOCS_HEADER], [MENTIONS_HEADER]
        for docid, text, mentions in docs:
            md5 = hashlib.md5((text or "").encode("utf-8")).hexdigest()
            docs_tsv.append(f"{docid}\t{docid} title\t1\t2\thttps://{lang}.wikipedia.org/wiki/{docid}\t{md5}\n")
            pos = 0
            for surface, key in mentions:
                pos = text.index(surface, pos) if text is not None else 0
                mentions_tsv.append(_mention_line(docid, pos, len(surface), surface, key, lang))
                pos += len(surface)
            if text is not None:
                (folder / "text" / docid).write_bytes(text.encode("utf-8"))
        if lang == "en":
            mentions_tsv += [
                _mention_line("en-2", 0, 5, "Tokio", TOKYO, "en"),  # line 10: does not match the text
                _mention_line("en-1", "x", 5, "Paris", PARIS, "en"),  # line 11: bad integer
                _mention_line("en-9", 0, 5, "Paris", PARIS, "en"),  # line 12: unknown docid
                "en-1\t0\t5\tParis\n",  # line 13: wrong number of fields
                _mention_line("en-1", 60, 50, "cities.", PARIS, "en"),  # line 14: outside the text
            ]
        (folder / "docs.tsv").write_text("".join(docs_tsv), encoding="utf-8")
        (folder / "mentions.tsv").write_text("".join(mentions_tsv), encoding="utf-8")
    return dataset


@pytest.fixture
def mewsli(tmp_path: Path) -> Path:
    return write_mewsli(tmp_path / "output" / "dataset")


@pytest.fixture(scope="module")
def linker(tiny_demo, embedded_db):
    return Linker(tiny_demo, embedded_db, languages=["en", "ja"])


def test_reader_spans_keys_and_skips(mewsli):
    data = read_mewsli(mewsli)
    assert isinstance(data, LinkingSet) and data.languages == ("en", "ja")
    assert [(d.lang, d.docid) for d in data] == [
        ("en", "en-1"),
        ("en", "en-2"),
        ("ja", "ja-1"),
        ("ja", "ja-2"),
        ("ja", "ja-3"),
    ]
    en2 = data.docs[1]
    assert en2.text == "Tokyo is in Japan.\r\nAtlantis is not."
    assert en2.mentions == (
        GoldMention(0, 5, "Tokyo", TOKYO),
        GoldMention(12, 17, "Japan", JAPAN),
        GoldMention(20, 28, "Atlantis", NOT_IN_KB),
    )
    for doc in data:
        assert all(doc.text[m.start : m.end] == m.surface for m in doc.mentions)
    assert [(m.surface, m.key) for m in data.docs[2].mentions] == [(s, k) for s, k in JA[0][2]]
    assert data.docs[4].mentions == () and data.mentions == 13
    assert data.skipped == {
        "document without text file": 1,
        "mention of a document without text file": 1,
        "mention does not match the text": 1,
        "bad integer": 1,
        "unknown docid": 1,
        "wrong number of fields": 1,
        "span outside the text": 1,
    }
    mentions_tsv = mewsli / "en" / "mentions.tsv"
    assert f"{mentions_tsv}:10: mention does not match the text (text has 'Tokyo', mention 'Tokio')" in data.examples
    assert any(e.startswith(f"{mentions_tsv}:11: bad integer") for e in data.examples)
    assert any(e.startswith(f"{mentions_tsv}:12: unknown docid") for e in data.examples)
    assert any(e.startswith(f"{mentions_tsv}:13: wrong number of fields") for e in data.examples)
    assert any(e.startswith(f"{mewsli / 'en' / 'docs.tsv'}:4: document without text file") for e in data.examples)
    assert "skipped 7 records" in repr(data) and "LinkDoc('en-1', lang='en'" in repr(data.docs[0])
    # one language folder, a language subset, the extraction script's output folder
    assert [d.docid for d in read_mewsli(mewsli / "ja")] == ["ja-1", "ja-2", "ja-3"]
    only_ja = read_mewsli(mewsli, ["ja"])
    assert only_ja.languages == ("ja",) and only_ja.skipped == {}
    assert read_mewsli(mewsli.parent).docs == data.docs


def test_reader_fatal_errors(mewsli, tmp_path):
    with pytest.raises(kb.KbFormatError, match="languages here: en, ja"):
        read_mewsli(mewsli, ["de"])
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(kb.KbFormatError, match="no language folders"):
        read_mewsli(empty)
    with pytest.raises(kb.KbFormatError, match="no such folder"):
        read_mewsli(tmp_path / "nowhere")
    docs_tsv = mewsli / "ja" / "docs.tsv"
    docs_tsv.write_text(docs_tsv.read_text(encoding="utf-8").replace("docid\t", "doc\t", 1), encoding="utf-8")
    with pytest.raises(kb.KbFormatError, match=r"ja[/\\]docs.tsv: no column 'docid'"):
        read_mewsli(mewsli)
    mentions_tsv = mewsli / "en" / "mentions.tsv"
    mentions_tsv.write_text(mentions_tsv.read_text(encoding="utf-8").replace("\tqid\t", "\tQID\t", 1), encoding="utf-8")
    with pytest.raises(kb.KbFormatError, match=r"en[/\\]mentions.tsv: no column 'qid'"):
        read_mewsli(mewsli, ["en"])
    mentions_tsv.unlink()
    with pytest.raises(kb.KbFormatError, match=r"en[/\\]mentions.tsv: missing"):
        read_mewsli(mewsli, ["en"])


def _by_hand(docs, linker, lang, method, embedded_db):
    """Counts of one (language, method) row, one document at a time (threshold 0, as evaluate_linking scores
    without a nil_threshold: the choice of entity alone)."""
    n = in_kb = correct = amb = amb_correct = detected = tp = 0
    for doc in (d for d in docs if d.lang == lang):
        linked = linker.link(
            doc.text, lang, method=method, spans=[(m.start, m.end) for m in doc.mentions], nil_threshold=0.0
        )
        assert len(linked) == len(doc.mentions)
        for gold, pred in zip(doc.mentions, linked):
            assert (pred.start, pred.end) == (gold.start, gold.end)
            n += 1
            if gold.key not in embedded_db:
                continue
            in_kb += 1
            hit = not pred.nil and pred.key == gold.key
            correct += hit
            if len(linker.index.candidates(lang, gold.surface)) >= 2:
                amb += 1
                amb_correct += hit
        found = {
            (m.start, m.end, m.key) for m in linker.link(doc.text, lang, method=method, nil_threshold=0.0) if not m.nil
        }
        detected += len(found)
        tp += len(found & {(m.start, m.end, m.key) for m in doc.mentions})
    return n, in_kb, correct, amb, amb_correct, detected, tp


def test_evaluate_linking_matches_hand_counts(mewsli, linker, embedded_db, tmp_path):
    data = read_mewsli(mewsli)
    report = evaluate_linking(data, linker, progress=False, batch_docs=2)
    methods = ("prior", "model", "combined", "global")
    assert [(r["lang"], r["method"]) for r in report.rows] == [(l, m) for l in ("en", "ja", "all") for m in methods]
    assert (
        report.languages == ["en", "ja"]
        and report.skipped == data.skipped
        and report.skipped_examples == list(data.examples)
    )
    # the prior is known exactly: every mention right but Valencia (prior: Venezuela's), Atlantis is not in the kb
    prior_en, prior_ja = report.row("en", "prior"), report.row("ja", "prior")
    assert (
        prior_en["mentions"],
        prior_en["in_kb"],
        prior_en["correct"],
        prior_en["ambiguous"],
        prior_en["ambiguous_correct"],
    ) == (7, 6, 5, 2, 1)
    assert (
        prior_ja["mentions"],
        prior_ja["in_kb"],
        prior_ja["correct"],
        prior_ja["ambiguous"],
        prior_ja["ambiguous_correct"],
    ) == (6, 6, 5, 2, 1)
    assert prior_en["accuracy"] == pytest.approx(5 / 6) and prior_en["ambiguous_accuracy"] == pytest.approx(0.5)
    for lang in ("en", "ja"):
        for method in methods:
            row = report.row(lang, method)
            n, in_kb, correct, amb, amb_correct, detected, tp = _by_hand(data.docs, linker, lang, method, embedded_db)
            assert (row["mentions"], row["in_kb"], row["correct"], row["ambiguous"], row["ambiguous_correct"]) == (
                n,
                in_kb,
                correct,
                amb,
                amb_correct,
            )
            assert (row["detected"], row["true_positives"]) == (detected, tp)
            assert row["accuracy"] == pytest.approx(correct / in_kb)
            p, r = tp / detected, tp / n
            assert row["precision"] == pytest.approx(p) and row["recall"] == pytest.approx(r)
            assert row["f1"] == pytest.approx(2 * p * r / (p + r) if p + r else 0.0)
    for method in methods:
        both, total = [report.row(l, method) for l in ("en", "ja")], report.row("all", method)
        for col in (
            "docs",
            "mentions",
            "in_kb",
            "correct",
            "ambiguous",
            "ambiguous_correct",
            "detected",
            "true_positives",
        ):
            assert total[col] == sum(r[col] for r in both)
        assert total["accuracy"] == pytest.approx(total["correct"] / total["in_kb"])
        assert total["precision"] == pytest.approx(total["true_positives"] / total["detected"])
    assert report.row("all", "prior")["mentions"] == 13 and report.row("all", "prior")["docs"] == 5
    # outputs
    df = report.to_pandas()
    assert list(df.columns) == list(METRIC_COLUMNS) and len(df) == 12
    assert df.loc[(df["lang"] == "ja") & (df["method"] == "prior"), "correct"].item() == 5
    path = tmp_path / "report.json"
    text = report.to_json(path)
    assert json.loads(path.read_text(encoding="utf-8")) == json.loads(text)
    again = LinkingReport.from_dict(json.loads(text))
    assert again.rows == report.rows and again.methods == report.methods and again.skipped == report.skipped
    md = report.to_markdown()
    assert md.splitlines()[0].startswith("| lang | method | mentions | in KB | acc |")
    assert "| en | prior | 7 | 6 | 83.3 | 2 | 50.0 |" in md
    assert repr(report).startswith(
        "LinkingReport(2 languages, methods prior, model, combined, global, 13 gold mentions"
    )


def test_evaluate_linking_options(linker):
    docs = [
        LinkDoc(
            "d1", "en", "Paris and London.", (GoldMention(0, 5, "Paris", PARIS), GoldMention(10, 16, "London", LONDON))
        )
    ]
    report = evaluate_linking(docs, linker, methods=["prior"], end_to_end=False, progress=False)
    assert [r["lang"] for r in report.rows] == ["en", "all"] and report.skipped == {}
    row = report.row("en", "prior")
    assert (row["accuracy"], row["ambiguous"], row["ambiguous_accuracy"]) == (1.0, 1, 1.0)
    assert row["precision"] is row["recall"] is row["f1"] is row["detected"] is None
    assert "F1" not in report.to_markdown() and "| en | prior | 2 | 2 | 100.0 | 1 | 100.0 |" in report.to_markdown()
    nil = evaluate_linking(docs, linker, methods="prior", nil_threshold=1.0, progress=False).row("en", "prior")
    assert (nil["correct"], nil["accuracy"], nil["detected"], nil["precision"], nil["recall"]) == (0, 0.0, 0, None, 0.0)
    assert nil["f1"] is None
    with pytest.raises(kb.OptionError, match="'best'"):
        evaluate_linking(docs, linker, methods=["prior", "best"], progress=False)
    with pytest.raises(kb.MlukeError, match="no language de"):
        evaluate_linking([LinkDoc("d", "de", "Paris.")], linker, progress=False)


def test_eval_link_cli(mewsli, tiny_demo, embedded_db_path, linker, tmp_path):
    runner = CliRunner()
    base = [
        "eval-link",
        str(mewsli),
        "--langs",
        "en,ja",
        "--methods",
        "prior,combined",
        "--model",
        str(tiny_demo),
        "--db",
        str(embedded_db_path),
        "--no-progress",
    ]
    res = runner.invoke(app, [*base, "--json", "-"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    expected = evaluate_linking(read_mewsli(mewsli), linker, methods=["prior", "combined"], progress=False)
    assert out["rows"] == expected.rows and out["skipped"]["bad integer"] == 1
    csv_path = tmp_path / "scores.csv"
    res = runner.invoke(app, [*base, "--no-end-to-end", "--csv", str(csv_path)])
    assert res.exit_code == 0, res.output
    assert csv_path.read_text().splitlines()[0] == ",".join(METRIC_COLUMNS)
    assert "83.3" in res.stdout and "skipped records" in res.stdout and "mention does not match the text" in res.stdout
    assert "mentions.tsv:10" in res.stdout
    res = runner.invoke(app, [*base, "--methods", "prior,best"])
    assert res.exit_code != 0 and "--methods" in res.exception.for_cli()


def test_eval_link_takes_db_and_the_old_kb_spelling(mewsli, tiny_demo, embedded_db):
    ask = {"langs": ["en"], "methods": ["prior"], "model": tiny_demo, "end_to_end": False, "progress": False}
    report = eval_link(mewsli, db=embedded_db, **ask)
    with pytest.warns(DeprecationWarning, match=r"eval_link\(kb=...\) is deprecated; use db="):
        old = eval_link(mewsli, kb=embedded_db, **ask)
    assert old.rows == report.rows and report.row("en", "prior")["in_kb"] > 0
