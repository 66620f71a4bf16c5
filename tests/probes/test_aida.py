"""AIDA-CoNLL: the AIDA-YAGO2 TSV reader, GERBIL's strong-match A2KB scores and D2KB in-kb accuracy, by hand."""

from pathlib import Path

import pytest

from kb.errors import InputFormatError, OptionError
from probes.aida import AidaMention, eval_aida, gold_keys, read_aida, score_aida, yago_title

DATA = Path(__file__).parent / "data" / "aida_sample.tsv"


def test_reads_documents_mentions_nme_and_splits():
    data = read_aida(DATA)
    assert [(d.id, d.split) for d in data] == [
        ("1 EU", "train"),
        ("947testa CRICKET", "testa"),
        ("1163testb SOCCER", "testb"),
    ]
    eu = data.documents[0]
    assert eu.text == "EU rejects German call ."
    assert eu.mentions[0] == AidaMention(0, 2, "EU", None) and eu.mentions[0].nil
    assert eu.mentions[1] == AidaMention(
        11, 17, "German", "Germany", "http://en.wikipedia.org/wiki/Germany", "11867", "/m/0345h"
    )
    soccer = data.split("testb")[0]
    assert soccer.text.split("\n")[:2] == ["SOCCER - JAPAN GET .", "Nadim Ladki"]
    spans = [(soccer.text[m.start : m.end], m.title) for m in soccer.mentions]
    assert spans == [
        ("JAPAN", "Japan"),
        ("Nadim Ladki", None),
        ("AL-AIN", "Al Ain"),
        ("United Arab Emirates", "United Arab Emirates"),
        ("Japan", "Japan"),
        ("São Paulo", "São Paulo"),
    ]
    assert yago_title("S\\u00e3o_Paulo") == "São Paulo" and not data.skipped
    with pytest.raises(OptionError, match="expected one of train, testa, testb"):
        data.split("test")


def test_bad_lines_and_empty_files(tmp_path):
    path = tmp_path / "x.tsv"
    path.write_text("stray\n-DOCSTART- (1 X)\nA\tX\tA\tA\nB\n", encoding="utf-8")
    data = read_aida(path)
    assert data.documents[0].text == "A B" and sum(data.skipped.values()) == 2
    (tmp_path / "empty.tsv").write_text("\n", encoding="utf-8")
    with pytest.raises(InputFormatError, match="AIDA document"):
        read_aida(tmp_path / "empty.tsv")


def test_strong_match_micro_macro_and_in_kb_accuracy_by_hand(embedded_db):
    docs = read_aida(DATA).split("testb") + read_aida(DATA).split("train")
    keys = gold_keys(docs, embedded_db)
    soccer, eu = keys
    japan, uae, sao_paulo, germany = soccer[0], soccer[3], soccer[5], eu[1]
    assert soccer[1] is None and soccer[2] == "title:Al Ain"  # --NME--, and a title the kb lacks
    assert all(k and not k.startswith("title:") for k in (japan, uae, sao_paulo, germany))
    m = docs[0].mentions
    predicted = [
        [
            (m[0].start, m[0].end, japan),  # right
            (m[1].start, m[1].end, uae),  # on a gold --NME-- span: left out
            (m[3].start, m[3].end, sao_paulo),  # wrong entity: a false positive and a false negative
            (m[4].start, m[4].end - 1, japan),  # wrong span: a false positive
        ],
        [(docs[1].mentions[1].start, docs[1].mentions[1].end, germany)],  # right
    ]
    disambiguated = [[japan, None, None, sao_paulo, None, sao_paulo], [None, germany]]
    scores = score_aida(docs, keys, predicted, disambiguated)
    # micro: tp 2, fp 2, fn 4 (UAE, the 2nd Japan, São Paulo, Al Ain) + 0
    assert scores.counts | {} == {
        "true_positives": 2,
        "false_positives": 2,
        "false_negatives": 4,
        "gold_nil": 2,
        "gold_not_in_kb": 1,
        "in_kb_mentions": 5,
    }
    assert scores.micro["precision"] == pytest.approx(2 / 4) and scores.micro["recall"] == pytest.approx(2 / 6)
    # macro: soccer p 1/3, r 1/5; eu p 1, r 1
    assert scores.macro["precision"] == pytest.approx((1 / 3 + 1) / 2)
    assert scores.macro["recall"] == pytest.approx((1 / 5 + 1) / 2)
    soccer_f1 = 2 * (1 / 3) * (1 / 5) / (1 / 3 + 1 / 5)
    assert scores.macro["f1"] == pytest.approx((soccer_f1 + 1) / 2)
    # D2KB: in-kb gold mentions are JAPAN, UAE, Japan, São Paulo, German: right on JAPAN, São Paulo, German
    assert scores.in_kb_accuracy == pytest.approx(3 / 5)
    empty = score_aida([docs[1]], [[None, None]], [[]])
    assert empty.macro == {"precision": 1.0, "recall": 1.0, "f1": 1.0}  # GERBIL: nothing gold, nothing found


def test_eval_aida_links_the_split_end_to_end_and_with_gold_spans(embedded_db):
    from types import SimpleNamespace

    calls = []

    def linker(texts, spans):
        calls.append(spans)
        doc = texts[0]
        if spans is None:  # finds one mention, "JAPAN", and links it
            start = doc.index("JAPAN")
            return [
                [SimpleNamespace(start=start, end=start + 5, key=embedded_db.resolve_title("en", "Japan"), nil=False)]
            ]
        return [[SimpleNamespace(start=s, end=e, key=None, nil=True) for s, e in spans[0]]]

    scores = eval_aida(DATA, split="testb", db=embedded_db, linker=linker)
    assert calls[0] is None and len(calls[1][0]) == 6
    assert scores.counts["true_positives"] == 1 and scores.micro["precision"] == 1.0
    assert scores.in_kb_accuracy == 0.0 and scores.documents == 1
    assert any("not in the kb" in n for n in scores.notes)
    with pytest.raises(InputFormatError, match="no document of split 'testa'"):
        eval_aida(DATA, split="testa", db=embedded_db, linker=linker, limit=0)
