"""probes.mewsli on folders written the way the Mewsli-9 extraction script writes them: pandas
``to_csv(sep="\\t")`` (default quoting) for docs.tsv / mentions.tsv, text files as UTF-8 bytes, and
``text_md5`` = MD5 of those bytes."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd

from probes import GoldMention, read_mewsli
from probes.mewsli import TEXT_MD5_MISMATCH

TR_TEXT = 'Başbakan "Bugün." dedi.\nİstanbul\tbüyük bir şehir.'
TR_MENTIONS = [('"Bugün."', "Q1"), ("İstanbul\tbüyük", "Q406")]  # a quote and a tab in mentions


def write_pandas_layout(
    folder: Path, texts: dict[str, str], mentions: list[tuple[str, str, str]], md5: dict[str, str] | None = None
) -> Path:
    """``folder/tr/{docs.tsv, mentions.tsv, text/}`` as the official scripts write them (columns and
    writer of ``write_doc_index`` / ``write_mention_index``, Mewsli-9's extra mention columns)."""
    lang = folder / "tr"
    (lang / "text").mkdir(parents=True)
    for docid, text in texts.items():
        (lang / "text" / docid).write_bytes(text.encode("utf-8"))
    md5 = md5 or {}
    docs = pd.DataFrame(
        [
            {
                "docid": d,
                "title": f'"{d}" başlık',
                "curid": 7,
                "revid": 8,
                "url": f"https://tr.wikinews.org/wiki?curid={d}",
                "text_md5": md5.get(d, hashlib.md5(t.encode("utf-8")).hexdigest()),
            }
            for d, t in texts.items()
        ]
    )
    docs.set_index("docid").to_csv(
        lang / "docs.tsv", sep="\t", encoding="utf-8", columns=["title", "curid", "revid", "url", "text_md5"]
    )
    rows = []
    for docid, surface, qid in mentions:
        start = texts[docid].index(surface)
        rows.append(
            {
                "docid": docid,
                "position": start,
                "length": len(surface),
                "mention": surface,
                "url": "http://tr.wikipedia.org/wiki/X",
                "lang": "tr",
                "qid": qid,
                "qid_in_refs": True,
                "freq_bin": 1,
            }
        )
    pd.DataFrame(rows).to_csv(lang / "mentions.tsv", sep="\t", encoding="utf-8", index=False)
    return folder


def test_reads_quoted_fields_as_pandas_writes_them(tmp_path):
    folder = write_pandas_layout(
        tmp_path,
        {"tr-1": TR_TEXT, "tr-2": "Ankara başkent."},
        [("tr-1", s, q) for s, q in TR_MENTIONS] + [("tr-2", "Ankara", "Q3640")],
    )
    raw = (folder / "tr" / "mentions.tsv").read_text(encoding="utf-8")
    assert '\t"""Bugün."""\t' in raw and '\t"İstanbul\tbüyük"\t' in raw  # the official layout, quoted
    assert '"""tr-1"" başlık"' in (folder / "tr" / "docs.tsv").read_text(encoding="utf-8")
    data = read_mewsli(folder)
    assert data.skipped == {} and data.mentions == 3
    tr1 = data.docs[0]
    assert tr1.text == TR_TEXT
    assert tr1.mentions == (GoldMention(9, 17, '"Bugün."', "Q1"), GoldMention(24, 38, "İstanbul\tbüyük", "Q406"))


def test_a_mention_with_a_line_break_spans_two_lines(tmp_path):
    text = "Satır bir\nsatır iki. Sonra Ankara."
    folder = write_pandas_layout(tmp_path, {"tr-1": text}, [("tr-1", "bir\nsatır", "Q5"), ("tr-1", "Ankara", "Q3640")])
    data = read_mewsli(folder)
    assert data.skipped == {}
    assert [m.surface for m in data.docs[0].mentions] == ["bir\nsatır", "Ankara"]


def test_text_md5_mismatch_is_reported_with_file_and_document_and_the_document_kept(tmp_path):
    folder = write_pandas_layout(
        tmp_path,
        {"tr-1": TR_TEXT, "tr-2": "Ankara başkent."},
        [("tr-1", '"Bugün."', "Q1"), ("tr-2", "Ankara", "Q3640")],
        md5={"tr-2": hashlib.md5(b"another text").hexdigest()},
    )
    data = read_mewsli(folder)
    assert data.skipped == {TEXT_MD5_MISMATCH: 1}
    docs_tsv = folder / "tr" / "docs.tsv"
    (example,) = data.examples
    assert example.startswith(f"{docs_tsv}:3: {TEXT_MD5_MISMATCH} (document tr-2: ")
    assert hashlib.md5("Ankara başkent.".encode()).hexdigest() in example
    assert [d.docid for d in data] == ["tr-1", "tr-2"] and data.mentions == 2  # kept, mentions checked one by one
    assert f"{TEXT_MD5_MISMATCH}: 1" in repr(data)


def test_an_unclosed_quote_costs_one_line_not_the_rest_of_the_file(tmp_path):
    folder = write_pandas_layout(
        tmp_path,
        {"tr-1": "Ankara ve İzmir ve Bursa."},
        [("tr-1", "Ankara", "Q3640"), ("tr-1", "İzmir", "Q35997"), ("tr-1", "Bursa", "Q40282")],
    )
    path = folder / "tr" / "mentions.tsv"
    lines = path.read_text(encoding="utf-8").split("\n")
    lines[2] = lines[2].replace("\tİzmir\t", '\t"İzmir\t')  # line 3: a quote opened and never closed
    path.write_text("\n".join(lines), encoding="utf-8")
    data = read_mewsli(folder)
    assert [m.surface for m in data.docs[0].mentions] == ["Ankara", "Bursa"]
    assert data.skipped == {"unreadable row": 1}
    assert data.examples[0] == f"{path}:3: unreadable row (unclosed quote)"
