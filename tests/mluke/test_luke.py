"""English LUKE checkpoints through ``mluke.load``: byte-level BPE tokenizer ids against transformers'
``LukeTokenizer``, the English entity vocabulary, entity-aware attention on and off, and encoder-only
(``LukeModel``) folders, with hidden states against transformers' ``LukeModel``. Tiny assets, built here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

import mluke
from mluke.errors import CheckpointError
from mluke.models.luke import LukeTokenizer, MissingHead
from tests.mluke.bpe_fixtures import write_byte_level_bpe

SENTENCES = [
    "Tokyo is the capital of Japan.",
    "Paris is the capital of France.",
    "The capital of Germany is Berlin.",
    "São Paulo is a city in Brazil, and Kyoto is in Japan.",
    "Star Wars: Episode IV was released in 1977!",
    "Beethoven was born in Bonn; he moved to Vienna.",
] * 3
ENTITIES = {"[PAD]": 0, "[UNK]": 1, "[MASK]": 2, "[MASK2]": 3, "Tokyo": 4, "Japan": 5, "São Paulo": 6}
ENTITIES["Star Wars: Episode IV"] = 7
TINY = {
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 37,
    "entity_emb_size": 16,
    "max_position_embeddings": 66,
    "type_vocab_size": 1,
    "layer_norm_eps": 1e-5,
    "hidden_dropout_prob": 0.0,
    "attention_probs_dropout_prob": 0.0,
}


def write_tokenizer(folder: Path) -> int:
    """vocab.json + merges.txt of a byte-level BPE trained here, added_tokens.json and entity_vocab.json;
    returns the word vocabulary size with <ent> and <ent2>."""
    write_byte_level_bpe(folder, SENTENCES, vocab_size=330)
    size = len(json.loads((folder / "vocab.json").read_text(encoding="utf-8")))
    (folder / "added_tokens.json").write_text(json.dumps({"<ent>": size, "<ent2>": size + 1}))
    (folder / "entity_vocab.json").write_text(json.dumps(ENTITIES, ensure_ascii=False), encoding="utf-8")
    return size + 2


def write_luke(folder: Path, *, eaa: bool, encoder_only: bool) -> torch.nn.Module:
    """A tiny English LUKE folder; returns the seeded transformers model its weights come from (a
    ``LukeModel``, or a ``LukeForMaskedLM`` with the word and entity heads tied as in the real files)."""
    from transformers import LukeConfig, LukeForMaskedLM, LukeModel

    vocab_size = write_tokenizer(folder)
    config = LukeConfig(vocab_size=vocab_size, entity_vocab_size=len(ENTITIES), use_entity_aware_attention=eaa, **TINY)
    torch.manual_seed(11)
    model = LukeModel(config) if encoder_only else LukeForMaskedLM(config)
    with torch.no_grad():
        for p in model.parameters():  # no zero rows or unit norms: every weight matters
            p.normal_(0.0, 0.3)
        if not encoder_only:
            model.lm_head.decoder.weight.copy_(model.luke.embeddings.word_embeddings.weight)
            model.entity_predictions.decoder.weight.copy_(model.luke.entity_embeddings.entity_embeddings.weight)
    config.architectures = ["LukeModel" if encoder_only else "LukeForMaskedLM"]
    config.to_json_file(str(folder / "config.json"))
    torch.save({k: v.clone() for k, v in model.state_dict().items()}, folder / "pytorch_model.bin")
    return model.eval()


TEXTS = [
    ("Tokyo is the capital of Japan.", [(0, 5), (24, 29)]),
    ("  Tokyo is in Japan ,  really!", [(2, 7), (14, 19)]),
    ("São Paulo is a city in Brazil.", [(0, 9), (23, 29)]),
    ("Star Wars: Episode IV was released in 1977!", [(0, 21), (38, 42)]),
    ("Beethoven moved to Vienna; Bonn is where he was born.", [(19, 25), (27, 31), (0, 9)]),
    ("Tokyo is the capital of <mask>.", [(24, 30)]),
    ("a  <mask>  b\tand\nTokyo.", [(3, 9), (17, 22)]),
    ("東京 is Tokyo.", [(0, 2), (6, 11)]),
    ("Hello\n<s>\nTokyo </s> x", [(10, 15)]),  # whitespace before a written special token: as transformers
]


def transformers_tokenizer(folder: Path, mask_lstrip: bool = True):
    """transformers' ``LukeTokenizer`` on the folder's files, ``<mask>`` left-stripped or not as told (luke-base's
    ``special_tokens_map.json`` strips; transformers 4.x strips by default, 5.x does not unless told).

    ``from_pretrained`` on the folder reads it the same way in transformers 4.x and 5.x, whose constructors differ
    (4.x takes file paths, 5.x the vocabularies as objects)."""
    from tokenizers import AddedToken
    from transformers import LukeTokenizer as HfLukeTokenizer

    tok = HfLukeTokenizer.from_pretrained(folder)
    tok.add_special_tokens({"mask_token": AddedToken("<mask>", lstrip=mask_lstrip, normalized=False, special=True)})
    return tok


def test_word_and_entity_ids_equal_transformers_luke_tokenizer(tmp_path):
    folder = tmp_path / "luke"
    write_tokenizer(folder)
    ours = LukeTokenizer.from_pretrained(folder)
    ref = transformers_tokenizer(folder)
    assert (ours.ent_id, ours.ent2_id) == tuple(ref.convert_tokens_to_ids(["<ent>", "<ent2>"]))
    # the word vocabulary of the checkpoint is the BPE's plus <ent>, <ent2>; transformers 5.x also adds the entity
    # specials [UNK], [PAD], [MASK], [MASK2] as word tokens (4 ids more than luke-base's 50267), 4.x does not
    assert ours.vocab_size == ours.ent2_id + 1 == len(ours.words.get_vocab())
    extra = set(ref.get_vocab()) - set(ours.words.get_vocab())
    assert extra in (set(), {"[UNK]", "[PAD]", "[MASK]", "[MASK2]"})
    assert all(ref.convert_tokens_to_ids(t) >= ours.vocab_size for t in extra)
    for text, spans in TEXTS:
        titles = [text[a:b] for a, b in spans]
        got = ours(text, entity_spans=spans, entities=titles, return_tensors=None)
        want = ref(text, entity_spans=spans, entities=titles)
        assert got["input_ids"][0] == want["input_ids"], text
        assert got["entity_ids"][0] == want["entity_ids"], text
        assert got["entity_position_ids"][0] == want["entity_position_ids"], text
        assert ours(text, return_tensors=None)["input_ids"][0] == ref(text)["input_ids"], text
    # the English titles are found (lang ignored), unknown ones are [UNK]
    ids, unknown = ours.entity_ids(["Tokyo", ("en", "Japan"), ("ja", "São Paulo"), "Osaka", None], lang="fr")
    assert ids == [4, 5, 6, 1, 2] and unknown == [3]
    assert ours.entity_vocab.get_id("en", "Star Wars: Episode IV") == 7
    assert ours.encode_words(["of <mask>"])[0] == [ours.words.token_to_id("of"), ours.mask_id]
    # a folder whose special_tokens_map.json says <mask> keeps the space before it
    (folder / "special_tokens_map.json").write_text(json.dumps({"mask_token": {"content": "<mask>", "lstrip": False}}))
    keeping, plain = LukeTokenizer.from_pretrained(folder), transformers_tokenizer(folder, mask_lstrip=False)
    assert keeping.tokenize("of <mask>") == ["of", "Ġ", "<mask>"]
    keeping.save_pretrained(tmp_path / "saved")
    mask = json.loads((tmp_path / "saved" / "special_tokens_map.json").read_text(encoding="utf-8"))["mask_token"]
    assert mask["lstrip"] is False
    for text, spans in TEXTS[-3:]:
        got = keeping(text, entity_spans=spans, return_tensors=None)
        want = plain(text, entity_spans=spans)
        assert got["input_ids"][0] == want["input_ids"] and got["entity_position_ids"][0] == want["entity_position_ids"]
    # offsets: the pieces of a mention cover its characters
    enc = ours("São Paulo is a city in Brazil.", entity_spans=[(0, 9)], return_tensors=None)
    assert enc["entity_ids"][0] == [2]  # [MASK] without entities


def test_tokenizer_saves_and_reloads(tmp_path):
    folder = tmp_path / "luke"
    write_tokenizer(folder)
    tok = LukeTokenizer.from_pretrained(folder)
    tok.save_pretrained(tmp_path / "saved")
    again = LukeTokenizer.from_pretrained(tmp_path / "saved", entity_vocab=tok.entity_vocab)
    text, spans = TEXTS[3]
    assert again(text, entity_spans=spans, return_tensors=None) == tok(text, entity_spans=spans, return_tensors=None)


def _hidden(model, enc):
    with torch.no_grad():
        out = model(**{k: v for k, v in enc.items() if k != "offset_mapping"}, return_dict=True)
    return out.last_hidden_state, out.entity_last_hidden_state


@pytest.mark.parametrize("eaa", [False, True])
@pytest.mark.parametrize("encoder_only", [False, True])
def test_hidden_states_equal_transformers_luke_model(tmp_path, eaa, encoder_only):
    folder = tmp_path / "luke"
    ref = write_luke(folder, eaa=eaa, encoder_only=encoder_only)
    ref_encoder = ref if encoder_only else ref.luke
    model, tok, vocab = mluke.load(folder)
    assert isinstance(tok, LukeTokenizer) and len(vocab) == len(ENTITIES)
    assert model.config.use_entity_aware_attention is eaa
    assert model.luke.encoder.layer[0].attention.self.use_entity_aware_attention is eaa
    texts = [t for t, _ in TEXTS]
    enc = tok(texts, entity_spans=[s for _, s in TEXTS], entities=[[t[a:b] for a, b in s] for t, s in TEXTS])
    words, ents = model.encode(**enc)
    ref_words, ref_ents = _hidden(ref_encoder, enc)
    word_mask, ent_mask = enc["attention_mask"].bool(), enc["entity_attention_mask"].bool()
    word_diff = (words - ref_words)[word_mask].abs().max().item()
    ent_diff = (ents - ref_ents)[ent_mask].abs().max().item()
    print(f"eaa={eaa} encoder_only={encoder_only}: max abs diff words {word_diff:.2e}, entities {ent_diff:.2e}")
    assert word_diff < 1e-5 and ent_diff < 1e-5
    assert ref_words[word_mask].abs().max() > 0.1  # not a degenerate comparison
    if not eaa:
        return
    # entity-aware attention changes the states: the same weights with it off differ
    model.luke.encoder.layer[0].attention.self.use_entity_aware_attention = False
    assert (model.encode(**enc)[0] - words)[word_mask].abs().max() > 1e-3


def test_masked_lm_heads_of_a_luke_folder(tmp_path):
    folder = tmp_path / "luke"
    ref = write_luke(folder, eaa=True, encoder_only=False)
    model, tok, _ = mluke.load(folder)
    enc = tok("Tokyo is the capital of Japan.", entity_spans=[(24, 29)])
    with torch.no_grad():
        got = model(**enc)
        want = ref(**enc)
    assert torch.allclose(got.logits, want.logits, atol=1e-4)
    assert torch.allclose(got.entity_logits, want.entity_logits, atol=1e-4)


def test_encoder_only_folder_needs_a_head_only_where_one_is_used(tmp_path):
    folder = tmp_path / "encoder"
    ref = write_luke(folder, eaa=False, encoder_only=True)
    model, tok, _ = mluke.load(folder)
    assert isinstance(model.lm_head, MissingHead) and isinstance(model.entity_predictions, MissingHead)
    assert not any(k.startswith(("lm_head", "entity_predictions")) for k in model.state_dict())
    enc = tok("Tokyo is the capital of Japan.", entity_spans=[(0, 5)])
    _, ents = model.encode(**enc)
    with pytest.raises(CheckpointError, match=f"{folder}.*encoder without prediction heads.*entity-prediction"):
        model.entity_scores(ents[0], torch.tensor([4, 5]))
    with pytest.raises(CheckpointError, match=f"{folder}.*word-prediction"):
        model.word_scores(ents[0])
    with pytest.raises(CheckpointError, match="needs the word-prediction"):
        model(**enc)
    # span vectors need no head: equal to transformers' LukeModel's word states, mean-pooled
    vectors = mluke.span_vectors(str(folder), ["Tokyo is the capital of Japan."], [[(24, 29)]])
    words, _ = _hidden(ref, tok("Tokyo is the capital of Japan.", return_tensors="pt"))
    positions = tok("Tokyo is the capital of Japan.", entity_spans=[(24, 29)], return_tensors=None)
    inside = [p for p in positions["entity_position_ids"][0][0] if p >= 0]
    assert inside and torch.allclose(torch.from_numpy(vectors[0]), words[0, inside].mean(0), atol=1e-5)


def test_probing_an_encoder_only_folder_fails_clearly(tmp_path):
    from mluke.probing.cloze import probe

    folder = tmp_path / "encoder"
    write_luke(folder, eaa=False, encoder_only=True)
    for mode in ("entity", "word"):
        with pytest.raises(CheckpointError, match=f"{folder}.*needs the .* head"):
            probe(
                "The capital of [X] is [Y].",
                "en",
                subjects=["Japan"],
                candidates=["Tokyo", "Japan"],
                model=str(folder),
                mode=mode,
            )


def test_fine_tuning_an_encoder_only_folder(tmp_path):
    from mluke.finetuning import FineTuneConfig, FineTuner, load_transfer, new_model, predict_spans, save_transfer
    from mluke.finetuning.inputs import ner_rows

    folder = tmp_path / "encoder"
    write_luke(folder, eaa=True, encoder_only=True)
    bundle = mluke.load(folder)
    sentences, langs = [["Tokyo", "is", "in", "Japan", "."], ["Paris", "is", "in", "France", "."]], ["en", "en"]
    labels, gold = ["O", "CITY", "COUNTRY"], [[(0, 1, "CITY"), (3, 4, "COUNTRY")], [(0, 1, "CITY"), (3, 4, "COUNTRY")]]
    model = new_model(bundle, "ner", "entity", labels, settings={"seed": 0, "max_entities": 4})
    rows = ner_rows(
        bundle.tokenizer,
        sentences * 4,
        langs * 4,
        features="entity",
        max_entities=4,
        gold=gold * 4,
        label_ids={l: i for i, l in enumerate(labels)},
    )
    before = {k: v.clone() for k, v in model.state_dict().items()}
    FineTuner(
        model,
        rows,
        config=FineTuneConfig(learning_rate=1e-3, batch_size=4, epochs=1, max_entities=4),
        work=tmp_path / "work",
        evaluate=lambda m: 0.5,
        pad_id=bundle.tokenizer.pad_id,
        identity={"t": 1},
    ).train(progress=False)
    assert any(not torch.equal(before[k], v) for k, v in model.state_dict().items())  # it trained
    loaded, tok = load_transfer(save_transfer(model, bundle.tokenizer, tmp_path / "ner"))
    assert isinstance(tok, LukeTokenizer)
    assert predict_spans(loaded, tok, sentences, langs) == predict_spans(model, bundle.tokenizer, sentences, langs)


@pytest.mark.parametrize("encoder_only", [False, True])
def test_save_and_reload_keep_the_layout(tmp_path, encoder_only):
    folder = tmp_path / "luke"
    write_luke(folder, eaa=True, encoder_only=encoder_only)
    bundle = mluke.load(folder)
    out = mluke.save(bundle, tmp_path / "saved")
    assert (out / "vocab.json").is_file() and (out / "merges.txt").is_file()
    assert json.loads((out / "entity_vocab.json").read_text(encoding="utf-8")) == ENTITIES  # plain titles
    architecture = json.loads((out / "config.json").read_text(encoding="utf-8"))["architectures"]
    assert architecture == ["LukeModel" if encoder_only else "LukeForMaskedLM"]
    again = mluke.load(out)
    assert isinstance(again.tokenizer, LukeTokenizer) and isinstance(again.model.lm_head, MissingHead) is encoder_only
    text, spans = TEXTS[1]
    enc = bundle.tokenizer(text, entity_spans=spans)
    assert again.tokenizer(text, entity_spans=spans, return_tensors=None) == bundle.tokenizer(
        text, entity_spans=spans, return_tensors=None
    )
    for a, b in zip(bundle.model.encode(**enc), again.model.encode(**enc)):
        assert torch.equal(a, b)


def test_cli_probe_of_an_encoder_only_folder_says_a_head_is_needed(tmp_path):
    from typer.testing import CliRunner

    from mluke.cli import app

    folder = tmp_path / "encoder"
    write_luke(folder, eaa=False, encoder_only=True)
    args = ["probe", "[X] is the capital of [Y]", "--model", str(folder), "-s", "Japan", "--candidate", "Tokyo"]
    res = CliRunner().invoke(app, args)
    assert isinstance(res.exception, CheckpointError)  # main() prints it as one line
    assert f"{folder}: holds an encoder without prediction heads" in res.exception.for_cli()
    assert "head" in res.exception.for_cli().split("this needs the")[1]
