"""NER and relation-extraction readers on hand-written files in the distributed layouts (see data/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kb.errors import InputFormatError, OptionError
from probes.transfer.readers.ner import NerSentence, detect_format, read_ner, write_conll
from probes.transfer.readers.ner_tags import detect_scheme, spans_to_tags, tags_to_spans
from probes.transfer.readers.relations import ReExample, parse_label, read_re, relation_type, write_kbp37

DATA = Path(__file__).parent / "data"


def entities(dataset, sep: str = " ") -> list[list[tuple[str, str]]]:
    """Per sentence, (entity text, type) of every span: easy to check by eye against the file."""
    return [[(sep.join(s.words[a:b]), t) for a, b, t in s.spans] for s in dataset.sentences]


def write(tmp_path: Path, name: str, text: str, encoding: str = "utf-8") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode(encoding))
    return path


# -- NER: every distributed layout ---------------------------------------------------------------------------------


def test_conll2003_english_iob1():
    ds = read_ner(DATA / "conll2003_en.txt", lang="en")
    assert ds.scheme == "iob1" and ds.fmt == "conll" and ds.encoding == "utf-8"
    assert [s.spans for s in ds] == [
        ((0, 1, "ORG"), (2, 3, "MISC"), (6, 7, "MISC")),
        ((0, 2, "PER"),),
        ((2, 3, "LOC"), (3, 5, "LOC"), (6, 7, "LOC"), (7, 8, "ORG")),  # B-LOC splits Australia | New Zealand
        ((0, 1, "LOC"),),
    ]
    assert entities(ds)[2] == [("Australia", "LOC"), ("New Zealand", "LOC"), ("Fiji", "LOC"), ("Airways", "ORG")]
    assert ds.sentences[0].words[:3] == ("EU", "rejects", "German")  # first column; -DOCSTART- lines gone
    assert ds.types == ("LOC", "MISC", "ORG", "PER")
    assert {s.lang for s in ds} == {"en"}
    assert ds.skipped == {} and ds.examples == [] and ds.dropped_sentences == 0


def test_conll2003_german_five_columns_latin1():
    assert b"M\xfcnchner" in (DATA / "conll2003_de.txt").read_bytes()  # the fixture really is latin-1
    ds = read_ner(DATA / "conll2003_de.txt")
    assert ds.encoding == "latin-1" and ds.scheme == "iob1"
    assert entities(ds) == [
        [("Münchner", "MISC"), ("Christian Ude", "PER"), ("Köln", "LOC"), ("Europäischen Union", "ORG")],
        [("Düsseldorf", "LOC")],
    ]
    assert ds.sentences[1].words == ("Grüße", "aus", "Düsseldorf", "!")  # the word, not the lemma


def test_conll2002_spanish_two_columns_latin1():
    ds = read_ner(DATA / "conll2002_es.txt", lang="es")
    assert ds.encoding == "latin-1" and ds.scheme == "iob2"
    assert [s.spans for s in ds] == [
        ((1, 5, "ORG"), (9, 10, "LOC")),
        ((0, 2, "PER"), (3, 4, "ORG"), (6, 7, "LOC"), (7, 8, "LOC")),  # B-LOC B-LOC: two entities
    ]
    assert entities(ds)[0] == [("Peña Taurina de Logroño", "ORG"), ("España", "LOC")]
    assert len(ds) == 2  # the last sentence has no blank line after it


def test_conll2002_dutch_three_columns_docstart():
    ds = read_ner(DATA / "conll2002_nl.txt")
    assert ds.scheme == "iob2" and ds.encoding == "latin-1"
    assert entities(ds) == [
        [("Buitenlandse Zaken", "ORG"), ("België", "LOC"), ("Jan de Vries", "PER")],
        [("Nederlands", "MISC")],
    ]
    assert ds.sentences[0].words[0] == "De"  # -DOCSTART- directly followed by the sentence


def test_wikiann_languages_colons_and_characters():
    ds = read_ner(DATA / "wikiann.tsv")
    assert ds.fmt == "wikiann" and ds.scheme == "iob2" and ds.encoding == "utf-8"
    assert [s.lang for s in ds] == ["en", "en", "de", "ja"]
    assert ds.languages == ("de", "en", "ja")
    assert ds.sentences[1].words[2] == "12:30" and ds.sentences[1].words[4] == "Re:Zero"  # split on the first colon
    assert [s.spans for s in ds] == [
        ((0, 1, "LOC"), (5, 6, "LOC")),
        ((4, 5, "MISC"), (6, 8, "PER")),
        ((0, 2, "PER"), (4, 6, "ORG")),
        ((0, 2, "LOC"), (3, 5, "LOC")),
    ]
    ja = ds.sentences[3]
    assert ja.words[:2] == ("東", "京") and [ja.entity_text(sp, "") for sp in ja.spans] == ["東京", "日本"]


def test_wikiann_lang_keeps_one_language():
    ds = read_ner(DATA / "wikiann.tsv", lang="ja")
    assert [s.lang for s in ds] == ["ja"] and entities(ds, "") == [[("東京", "LOC"), ("日本", "LOC")]]
    with pytest.raises(InputFormatError, match=r"no sentence in language 'fr'.*de, en, ja"):
        read_ner(DATA / "wikiann.tsv", lang="fr")


def test_format_detection_and_explicit_format():
    assert detect_format(["en:Paris\tB-LOC", "en:is\tO"]) == "wikiann"
    assert detect_format(["Paris B-LOC", "is O"]) == "conll"
    assert detect_format(["Paris\tB-LOC", "is\tO"]) == "conll"  # tab-separated but no lang: prefix
    assert read_ner(DATA / "conll2002_es.txt", fmt="conll2002").fmt == "conll"
    forced = read_ner(DATA / "wikiann.tsv", fmt="conll")  # the prefix is then part of the word
    assert forced.sentences[0].words[0] == "en:Paris" and forced.sentences[0].lang is None
    with pytest.raises(OptionError, match=r"unknown format 'json'.*auto, conll, wikiann"):
        read_ner(DATA / "wikiann.tsv", fmt="json")


# -- NER: schemes -----------------------------------------------------------------------------------------------------


def test_tags_to_spans_each_scheme():
    iob1 = ["I-PER", "I-PER", "B-PER", "O", "I-LOC", "I-ORG"]
    assert tags_to_spans(iob1, "iob1") == [(0, 2, "PER"), (2, 3, "PER"), (4, 5, "LOC"), (5, 6, "ORG")]
    iob2 = ["B-PER", "I-PER", "B-PER", "O", "B-LOC", "I-LOC", "I-LOC", "O"]
    assert tags_to_spans(iob2, "iob2") == [(0, 2, "PER"), (2, 3, "PER"), (4, 7, "LOC")]
    assert tags_to_spans(["O", "I-LOC", "I-LOC"], "iob2") == [(1, 3, "LOC")]  # lenient: I- after O starts one
    bioes = ["S-PER", "B-LOC", "I-LOC", "E-LOC", "O", "B-ORG", "E-ORG", "S-ORG"]
    assert tags_to_spans(bioes, "bioes") == [(0, 1, "PER"), (1, 4, "LOC"), (5, 7, "ORG"), (7, 8, "ORG")]
    assert tags_to_spans(["O", "O"], "IOB2") == [] and tags_to_spans([], "iob1") == []


def test_tags_to_spans_rejects_bad_tags_and_schemes():
    with pytest.raises(OptionError, match=r"unknown tag scheme 'bilou'; valid schemes: iob1, iob2, bioes"):
        tags_to_spans(["O"], "bilou")
    with pytest.raises(OptionError, match=r"not a tag: 'PER'"):
        tags_to_spans(["PER"], "iob2")
    with pytest.raises(OptionError, match=r"BIOES"):
        tags_to_spans(["S-PER"], "iob2")


def test_detect_scheme():
    assert detect_scheme([["B-PER", "I-PER", "O", "B-LOC", "B-LOC"]]) == "iob2"
    assert detect_scheme([["B-PER", "I-PER"], ["I-LOC"]]) == "iob1"  # I- at sentence start
    assert detect_scheme([["O", "I-LOC"]]) == "iob1"  # I- after O
    assert detect_scheme([["B-PER", "I-LOC"]]) == "iob1"  # I- after another type
    assert detect_scheme([["B-PER", "E-PER"], ["I-LOC"]]) == "bioes"
    assert detect_scheme([["O"]]) == "iob2"


def test_explicit_scheme_reports_i_continuing_nothing(tmp_path):
    ds = read_ner(DATA / "conll2003_en.txt", scheme="iob2")  # an IOB1 file read as strict IOB2
    assert ds.scheme == "iob2"
    assert [s.spans for s in ds] == [s.spans for s in read_ner(DATA / "conll2003_en.txt")]  # repaired as B-
    assert ds.skipped == {"I- continuing nothing (read as B-)": 8}
    assert ds.examples[0] == f"{DATA / 'conll2003_en.txt'}:3: I- continuing nothing (read as B-) (I-ORG)"
    assert len(ds.examples) == 3 and len(ds) == 4 and ds.dropped_sentences == 0
    # an IOB2 file read as IOB1 is read the same, with nothing to report
    as_iob1 = read_ner(DATA / "conll2002_es.txt", scheme="iob1")
    assert as_iob1.scheme == "iob1" and as_iob1.skipped == {}
    assert [s.spans for s in as_iob1] == [s.spans for s in read_ner(DATA / "conll2002_es.txt")]


BIOES = "Anna S-PER\nlebt O\nin O\nNew B-LOC\nYork E-LOC\n\nSan B-LOC\nJose I-LOC\n. O\n"


def test_bioes_file(tmp_path):
    path = write(tmp_path, "bioes.txt", BIOES)
    ds = read_ner(path)
    assert ds.scheme == "bioes"
    assert [s.spans for s in ds] == [((0, 1, "PER"), (3, 5, "LOC")), ((0, 2, "LOC"),)]
    assert ds.skipped == {"entity not closed with E- (closed there)": 1}
    assert ds.examples == [f"{path}:8: entity not closed with E- (closed there) (I-LOC)"]


def test_impossible_or_unknown_scheme(tmp_path):
    path = write(tmp_path, "bioes.txt", BIOES)
    with pytest.raises(InputFormatError, match=r"E-/S- tags \(BIOES\) but scheme='iob2'.*scheme='bioes'") as info:
        read_ner(path, scheme="iob2")
    assert str(path) in str(info.value) and "--scheme bioes" in info.value.for_cli()
    with pytest.raises(InputFormatError, match=r"scheme='bioes' was given but the file has no E-/S- tag"):
        read_ner(DATA / "conll2002_es.txt", scheme="bioes")
    with pytest.raises(OptionError, match=r"unknown tag scheme 'bio'; valid schemes: auto, iob1, iob2, bioes"):
        read_ner(DATA / "conll2002_es.txt", scheme="bio")
    assert read_ner(DATA / "conll2002_es.txt", scheme="IOB2").scheme == "iob2"


# -- NER: bad lines, missing files, encodings ------------------------------------------------------------------------


def test_bad_conll_lines_drop_their_sentence_only(tmp_path):
    text = (
        "-DOCSTART- -X- -X- O\n\n"
        "Good NNP I-NP I-ORG\none CD I-NP O\n\n"  # 3-4: kept
        "Bad NNP I-NP I-PER\ncolumns NNS I-NP\n\n"  # 7: 3 columns instead of 4
        "Fine NNP I-NP I-LOC\n\n"  # 9: kept
        "Odd NNP I-NP PERSON\n\n"  # 11: not a tag
        "Lower NNP I-NP b-per\nword\n\n"  # 13: bad tag, 14: one column
        "Last NNP I-NP I-MISC\nline . O O\n"
    )  # 16-17: kept, no blank line at the end
    path = write(tmp_path, "bad.txt", text)
    ds = read_ner(path)
    assert entities(ds) == [[("Good", "ORG")], [("Fine", "LOC")], [("Last", "MISC")]]
    assert ds.skipped == {"wrong number of columns": 2, "bad tag": 2}
    assert ds.dropped_sentences == 3
    assert ds.examples == [
        f"{path}:7: wrong number of columns (3 instead of 4)",
        f"{path}:11: bad tag ('PERSON')",
        f"{path}:13: bad tag ('b-per')",
        f"{path}:14: wrong number of columns (1 instead of 4)",
    ]
    assert "4 bad or repaired lines" in repr(ds) and "dropped 3 sentences" in repr(ds)


def test_examples_keep_the_first_three_per_reason(tmp_path):
    path = write(tmp_path, "many.txt", "".join(f"w{i} X-{i}\n\n" for i in range(5)) + "ok O\n")
    ds = read_ner(path)
    assert ds.skipped == {"bad tag": 5} and len(ds.examples) == 3 and len(ds) == 1


def test_bad_wikiann_lines(tmp_path):
    text = (
        "en:Paris\tB-LOC\nen:.\tO\n\n"
        "Berlin\tB-LOC\n\n"  # 4: no lang: prefix
        "en:London\tB-LOC\tx\n\n"  # 6: three fields
        "de:Rom\tB-LOC\nfr:Rome\tB-LOC\n\n"  # 9: language changes
        "ja:京\tI-LOC\n"
    )  # kept (IOB1 detected: I- at the start)
    path = write(tmp_path, "bad.tsv", text)
    ds = read_ner(path)
    assert ds.fmt == "wikiann" and entities(ds, "") == [[("Paris", "LOC")], [("京", "LOC")]]
    assert ds.skipped == {"no lang: prefix": 1, "wrong number of columns": 1, "language changes inside a sentence": 1}
    assert [e.split(": ")[0] for e in ds.examples] == [f"{path}:4", f"{path}:6", f"{path}:9"]
    strict = read_ner(path, scheme="iob2")
    assert strict.skipped["I- continuing nothing (read as B-)"] == 1
    assert f"{path}:11: I- continuing nothing (read as B-) (I-LOC)" in strict.examples


def test_missing_empty_and_useless_files(tmp_path):
    missing = tmp_path / "nope" / "eng.train"
    with pytest.raises(InputFormatError, match="no such file") as info:
        read_ner(missing)
    assert str(missing) in str(info.value)
    with pytest.raises(InputFormatError, match="is a folder"):
        read_ner(tmp_path)
    with pytest.raises(InputFormatError, match=r"no sentence found \(empty file\?\)"):
        read_ner(write(tmp_path, "empty.txt", "-DOCSTART- -X- -X- O\n\n\n"))
    with pytest.raises(InputFormatError, match=r"no sentence found \(skipped bad tag: 1; e.g. .*:1: bad tag"):
        read_ner(write(tmp_path, "bad.txt", "word NOTATAG\n"))


def test_encodings(tmp_path):
    # the same German sentence as UTF-8 and as latin-1; a 0x85 byte (latin-1 NEL) must not end a line
    text = "Grüße O\naus O\nMünchen B-LOC\n"
    utf8, latin1 = write(tmp_path, "u.txt", text), write(tmp_path, "l.txt", text, "latin-1")
    assert read_ner(utf8).encoding == "utf-8" and read_ner(latin1).encoding == "latin-1"
    assert read_ner(utf8).sentences == read_ner(latin1).sentences
    odd = tmp_path / "odd.txt"
    odd.write_bytes(b"a\x85b O\nM\xfcnchen B-LOC\n")
    ds = read_ner(odd)
    assert ds.encoding == "latin-1" and ds.sentences[0].words == ("a\x85b", "München") and ds.skipped == {}
    bom = write(tmp_path, "bom.tsv", "\ufeffen:Paris\tB-LOC\n")
    assert read_ner(bom).sentences[0].words == ("Paris",)


def test_crlf_conll(tmp_path):
    path = write(tmp_path, "crlf.txt", "Peter I-PER\r\nBlackburn I-PER\r\n\r\nx O\r\n")
    ds = read_ner(path)
    assert entities(ds) == [[("Peter Blackburn", "PER")], []] and ds.scheme == "iob1"


# -- NER: tags for seqeval, writing ------------------------------------------------------------------------------------


def test_spans_to_tags():
    assert spans_to_tags(6, [(3, 5, "LOC"), (0, 1, "PER"), (1, 2, "PER")]) == [
        "B-PER",
        "B-PER",
        "O",
        "B-LOC",
        "I-LOC",
        "O",
    ]
    assert spans_to_tags(0, []) == []
    with pytest.raises(OptionError, match="overlaps"):
        spans_to_tags(5, [(0, 2, "PER"), (1, 3, "LOC")])
    with pytest.raises(OptionError, match="outside a sentence of 2 words"):
        spans_to_tags(2, [(1, 3, "PER")])
    with pytest.raises(OptionError, match="empty"):
        spans_to_tags(2, [(1, 1, "PER")])


@pytest.mark.parametrize(
    "name", ["conll2003_en.txt", "conll2003_de.txt", "conll2002_es.txt", "conll2002_nl.txt", "wikiann.tsv"]
)
@pytest.mark.parametrize("fmt", ["wikiann", "conll"])
def test_write_conll_round_trip(tmp_path, name, fmt):
    original = read_ner(DATA / name, lang=None if name == "wikiann.tsv" else name[-6:-4])
    path = write_conll(original, tmp_path / "out" / f"{name}.{fmt}", fmt=fmt)
    again = read_ner(path)
    assert again.fmt == fmt and again.scheme == "iob2" and again.encoding == "utf-8" and again.skipped == {}
    assert [(s.words, s.spans) for s in again] == [(s.words, s.spans) for s in original]
    if fmt == "wikiann":
        assert [s.lang for s in again] == [s.lang for s in original]


def test_write_conll_writes_iob2_lines(tmp_path):
    sentences = [
        NerSentence(("東", "京", "は"), ((0, 2, "LOC"),), "ja"),
        NerSentence((), (), "ja"),
        NerSentence(("New", "York", "Boston"), ((0, 2, "LOC"), (2, 3, "LOC")), "en"),
    ]
    path = write_conll(sentences, tmp_path / "w.tsv")
    assert path.read_text(encoding="utf-8") == (
        "ja:東\tB-LOC\nja:京\tI-LOC\nja:は\tO\n\nen:New\tB-LOC\nen:York\tI-LOC\nen:Boston\tB-LOC\n\n"
    )
    path = write_conll(sentences[2:], tmp_path / "w.txt", fmt="conll")
    assert path.read_text(encoding="utf-8") == "New B-LOC\nYork I-LOC\nBoston B-LOC\n\n"


def test_write_conll_refuses_what_it_cannot_read_back(tmp_path):
    with pytest.raises(OptionError, match="needs a language code"):
        write_conll([NerSentence(("x",), ())], tmp_path / "a.tsv")
    with pytest.raises(OptionError, match="cannot write the word 'New York'"):
        write_conll([NerSentence(("New York",), ((0, 1, "LOC"),))], tmp_path / "a.txt", fmt="conll")
    with pytest.raises(OptionError, match="unknown format"):
        write_conll([], tmp_path / "a.txt", fmt="csv")


# -- relation extraction -----------------------------------------------------------------------------------------------


def test_kbp37_layout_crlf_both_directions():
    assert b"\r\n" in (DATA / "kbp37.txt").read_bytes()
    ds = read_re(DATA / "kbp37.txt", lang="en")
    assert [e.id for e in ds] == ["0", "1", "2", "3", "4", "5"]
    assert [(e.head_text, e.tail_text, e.label) for e in ds] == [
        ("Maria Lopez", "Acme Corp", "per:employee_of(e1,e2)"),
        ("John Smith", "Globex", "per:employee_of(e1,e2)"),  # e2 before e1 in the sentence
        ("Initech", "Bill Lumbergh", "org:founded_by(e1,e2)"),
        ("Bill Lumbergh", "Initech", "org:founded_by(e2,e1)"),
        ("Paris", "London", "no_relation"),
        ("Pixies", "Boston", "org:city_of_headquarters(e1,e2)"),
    ]
    first = ds.examples[0]
    assert first.text == "Maria Lopez , a senior engineer at Acme Corp , said the launch went well ."
    assert first.head == (0, 11) and first.tail == (35, 44) and first.lang == "en"
    second = ds.examples[1]
    assert second.text == "Globex hired John Smith as its new chief financial officer ."
    assert second.head == (13, 23) and second.tail == (0, 6)
    assert ds.examples[5].text == "The band Pixies formed in Boston ." and ds.examples[5].head == (9, 15)
    assert ds.labels == (
        "no_relation",
        "org:city_of_headquarters(e1,e2)",
        "org:founded_by(e1,e2)",
        "org:founded_by(e2,e1)",
        "per:employee_of(e1,e2)",
    )
    assert ds.relation_types == ("org:city_of_headquarters", "org:founded_by", "per:employee_of")
    assert ds.skipped == {} and ds.examples_skipped == []
    for e in ds:
        assert "\r" not in e.text + e.label and "  " not in e.text and e.text == e.text.strip()


def test_relx_german_utf8_tight_markers():
    ds = read_re(DATA / "relx_de.txt", lang="de")
    assert ds.encoding == "utf-8" and len(ds) == 4 and {e.lang for e in ds} == {"de"}
    tight = ds.examples[1]
    assert tight.text == "Der Sitz von Volkswagen ist in Wolfsburg, Niedersachsen."  # no space added at "Wolfsburg,"
    assert (tight.head_text, tight.tail_text) == ("Wolfsburg", "Volkswagen")
    assert tight.head == (31, 40) and tight.tail == (13, 23)
    assert (ds.examples[2].head_text, ds.examples[2].tail_text) == ("Jürgen Müller", "Müller & Söhne GmbH")
    assert ds.examples[2].label == "org:top_members/employees(e2,e1)"
    assert ds.examples[3].text == "München liegt südlich von Nürnberg ."


def test_re_bad_blocks_are_counted_with_their_line(tmp_path):
    text = (
        '1\t" <e1> A </e1> met <e2> B </e2> . "\nno_relation\n\n'  # 1: good
        "no tab here <e1> A </e1> <e2> B </e2>\nno_relation\n\n"  # 4: no id<TAB>
        '3\t" <e1> A </e1> met B . "\nno_relation\n\n'  # 7: no <e2> at all
        '4\t" <e1> A </e1> met <e2> B </e2> and <e1> C </e1> "\nno_relation\n\n'  # 10: <e1> twice
        '5\t" <e1> A met <e2> B </e2> . "\nno_relation\n\n'  # 13: no </e1>
        '6\t" </e1> A <e1> met <e2> B </e2> . "\nno_relation\n\n'  # 16: closed before opened
        '7\t" <e1> A <e2> B </e2> </e1> . "\nno_relation\n\n'  # 19: nested
        '8\t" <e1> A </e1> met <e2> B </e2> . "\nper:title\n\n'  # 23: no direction
        '9\t" <e1> A </e1> met <e2> B </e2> . "\nOther\n\n'  # 26: not a label
        '10\t" <e1> </e1> met <e2> B </e2> . "\nno_relation\n\n'  # 28: empty entity: kept, as RELX reads it
        '11\t" <e1> A </e1> met <e2> B </e2> . "\n\n'  # 31: no label
        '12\t" <e1> C </e1> saw <e2> D </e2> . "\nper:spouse(e2,e1)\n'
    )  # 34: good
    path = write(tmp_path, "bad.txt", text)
    ds = read_re(path)
    assert [(e.id, e.head_text, e.tail_text) for e in ds] == [("1", "A", "B"), ("10", "", "B"), ("12", "C", "D")]
    assert ds.examples[1].text == "met B ." and ds.examples[1].head == (0, 0) and ds.examples[1].tail == (4, 5)
    assert ds.skipped == {
        "no id<TAB>sentence line": 1,
        "missing marker": 1,
        "duplicated marker": 1,
        "unbalanced markers": 2,
        "entities overlap": 1,
        "bad label": 2,
        "no label line": 1,
    }
    lines = [e.split(": ")[0].rsplit(":", 1)[1] for e in ds.examples_skipped]
    assert lines == ["4", "7", "10", "13", "16", "19", "23", "26", "31"]
    assert f"{path}:23: bad label ('per:title')" in ds.examples_skipped


def test_re_blocks_without_blank_line_and_comments(tmp_path):
    text = (
        '1\t"<e1>A</e1> met <e2>B</e2>."\nno_relation\n'
        '2\t"<e2>C</e2> met <e1>D</e1>."\nper:spouse(e1,e2)\nComment: SemEval-2010 style\n'
    )
    ds = read_re(write(tmp_path, "x.txt", text))
    assert [(e.id, e.text, e.label) for e in ds] == [
        ("1", "A met B.", "no_relation"),
        ("2", "C met D.", "per:spouse(e1,e2)"),
    ]


def test_re_missing_and_empty_files(tmp_path):
    with pytest.raises(InputFormatError, match="no such file") as info:
        read_re(tmp_path / "kbp37" / "test.txt")
    assert "kbp37" in str(info.value)
    with pytest.raises(InputFormatError, match=r"no example found \(empty file\?\)"):
        read_re(write(tmp_path, "empty.txt", "\n\n"))
    with pytest.raises(InputFormatError, match=r"no example found \(skipped missing marker: 1"):
        read_re(write(tmp_path, "nomarks.txt", '1\t"plain sentence"\nno_relation\n'))


def test_relation_type_and_labels():
    assert relation_type("per:employee_of(e1,e2)") == "per:employee_of"
    assert relation_type("org:top_members/employees(e2,e1)") == "org:top_members/employees"
    assert relation_type("no_relation") is None
    assert parse_label("org:founded_by(e2,e1)") == ("org:founded_by", "e2,e1")
    for bad in ("per:title", "Other", "per:title(e1,e3)", ""):
        with pytest.raises(OptionError, match="not a relation label"):
            relation_type(bad)


@pytest.mark.parametrize("name", ["kbp37.txt", "relx_de.txt"])
def test_write_kbp37_round_trip(tmp_path, name):
    original = read_re(DATA / name)
    path = write_kbp37(original, tmp_path / "out" / "test.txt")
    again = read_re(path)
    assert again.skipped == {} and again.examples == original.examples


def test_write_kbp37_layout(tmp_path):
    examples = [
        ReExample("7", "Anna (Berlin) met Bob.", (0, 4), (6, 12), "per:cities_of_residence(e1,e2)"),
        ReExample("8", "AB", (0, 1), (1, 2), "no_relation"),
    ]
    path = write_kbp37(examples, tmp_path / "w.txt")
    assert path.read_text(encoding="utf-8") == (
        '7\t" <e1> Anna </e1> (<e2>Berlin</e2>) met Bob. "\nper:cities_of_residence(e1,e2)\n\n'
        '8\t" <e1> A</e1><e2>B </e2> "\nno_relation\n\n'
    )  # padded only beside a space or an end
    assert read_re(path).examples == examples


def test_write_kbp37_refuses_bad_examples(tmp_path):
    bad = [
        ReExample("1", "A met B", (0, 1), (0, 3), "no_relation"),  # overlap
        ReExample("2", "A met B", (0, 1), (6, 9), "no_relation"),  # outside the text
        ReExample("3", "A met B", (0, 1), (6, 7), "per:title"),  # no direction
        ReExample("4", "A\nmet B", (0, 1), (6, 7), "no_relation"),
    ]  # line break
    for example in bad:
        with pytest.raises(OptionError, match=f"cannot write example '{example.id}'"):
            write_kbp37([example], tmp_path / "x.txt")


def test_relx_empty_entity_is_kept_and_encoded_between_its_markers(tmp_path, tiny_demo):
    # RELX's test sets have one sentence whose <e1> marks nothing; RELX's and LUKE's readers keep it
    from mluke import MlukeTokenizer
    from mluke.finetuning.inputs import relation_rows

    text = '1\t" Die <e1> </e1> Firma <e2> Siemens </e2> sitzt in München . "\norg:city_of_headquarters(e2,e1)\n\n'
    ds = read_re(write(tmp_path, "relx.txt", text), lang="de")
    (example,) = ds.examples
    assert example.head == (3, 3) and example.head_text == "" and example.tail_text == "Siemens"  # after "Die"
    tok = MlukeTokenizer.from_pretrained(tiny_demo)
    (row,) = relation_rows(tok, [example.text], [(example.head, example.tail)], features="word")
    (h0, _), (t0, _) = row.slots
    assert row.ids[h0] == row.ids[h0 + 1] == tok.ent_id  # <ent><ent>: the empty mention between its markers
    assert row.ids[t0] == tok.ent2_id
