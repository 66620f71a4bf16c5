"""Checks that need CUDA (marked ``gpu``; skipped without it, with the reason): a probe, a link, a
fine-tuning step, span vectors and pretraining steps on the GPU, in fp32 and bf16."""

import pytest
import torch

import mluke

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (no GPU here)")]


@pytest.mark.parametrize("dtype", [None, "bf16"])
def test_probe_and_link_on_the_gpu(tiny_demo, embedded_db, dtype):
    cpu = mluke.probe("[X] is the capital of [Y].", "en", model=tiny_demo, db=embedded_db, top_k=1)
    gpu = mluke.probe(
        "[X] is the capital of [Y].", "en", model=tiny_demo, db=embedded_db, top_k=1, device="cuda", dtype=dtype
    )
    same = (cpu.to_pandas()["prediction"].values == gpu.to_pandas()["prediction"].values).mean()
    assert same >= (0.99 if dtype is None else 0.9)
    text = "Ich wohne in Berlin, der Hauptstadt von Deutschland."
    on_cpu = [m.key for m in mluke.link(text, "de", model=tiny_demo, db=embedded_db)]
    assert on_cpu == [
        m.key for m in mluke.link(text, "de", model=tiny_demo, db=embedded_db, device="cuda", dtype=dtype)
    ]


def test_span_vectors_on_the_gpu(tiny_demo):
    texts, spans = ["Paris is in France."], [[(0, 5), (12, 18)]]
    cpu = mluke.span_vectors(tiny_demo, texts, spans, normalize=True)
    gpu = mluke.span_vectors(tiny_demo, texts, spans, normalize=True, device="cuda")
    assert abs(cpu - gpu).max() < 1e-4


def test_a_fine_tuning_run_on_the_gpu(tiny_demo, tmp_path):
    from pathlib import Path

    from mluke.finetuning import FineTuneConfig, load_transfer
    from probes.transfer import finetune

    data = Path(__file__).parent / "probes" / "transfer" / "data" / "wikiann.tsv"
    report = finetune(
        "ner",
        data,
        data,
        output=tmp_path / "ner",
        model=tiny_demo,
        device="cuda",
        config=FineTuneConfig(learning_rate=1e-3, batch_size=4, epochs=1),
        progress=False,
    )
    assert report.history and load_transfer(tmp_path / "ner")[0].task == "ner"
