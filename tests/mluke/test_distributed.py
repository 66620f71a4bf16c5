"""Linking a dataset on a Ray cluster (:mod:`mluke.distributed`): a local cluster of 2 workers gives the rows of
``mluke link --jsonl`` mention for mention, survives a killed worker without a duplicate or missing row, resumes
a stopped job and refuses to mix two; span vectors equal one machine's."""

import gzip
import json
import os
import shutil
import signal
import time

import numpy as np
import pytest

pytest.importorskip("ray", reason="the ray extra is not installed (pip install 'mluke[ray]')")
pa = pytest.importorskip("pyarrow", reason="the ray extra is not installed (pip install 'mluke[ray]')")
import pyarrow.parquet as pq  # noqa: E402
import ray  # noqa: E402

import mluke.distributed.shards as shards_module  # noqa: E402
from kb.errors import InputFormatError, MlukeError, OutputError, OutputExistsError  # noqa: E402
from mluke.distributed import SpanSettings, link_dataset, read_span_vectors, span_index, span_vectors_dataset  # noqa: E402
from mluke.distributed.parts import SUCCESS, part_path, read_parts  # noqa: E402
from mluke.distributed.shards import Malformed, dataset_files, line_starts, plan_shards, read_shard  # noqa: E402
from mluke.distributed.work import MENTION_SCHEMA  # noqa: E402
from mluke.linking.corpus import link_corpus  # noqa: E402
from mluke.linking.documents import iter_documents  # noqa: E402
from mluke.results import LinkedMention  # noqa: E402
from mluke.spans import span_vectors  # noqa: E402

#: Small shards and chunks, so that 40 documents make 8 shards of several chunks; every candidate kept.
SMALL = {"shard_lines": 5, "chunk_texts": 2, "candidates": True}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A local Ray cluster of 2 CPUs; its workers get their own cache folder (never the user's)."""
    home = tmp_path_factory.mktemp("ray-home")
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        logging_level="ERROR",
        runtime_env={"env_vars": {"MLUKE_HOME": str(home), "OMP_NUM_THREADS": "1"}},
    )
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, embedded_db):
    """40 JSONL documents (ids, one in German, a blank line) about capitals, and the rows mluke link gives."""
    facts = list(embedded_db.facts(property="P36"))[:30]
    labels = embedded_db.labels(sorted({k for f in facts for k in (f.subject, f.object)}), "en")
    sentences = [
        embedded_db.template("P36", "en").fill(labels[f.subject], labels[f.object])
        for f in facts
        if f.subject in labels and f.object in labels
    ]
    folder = tmp_path_factory.mktemp("corpus")
    path = folder / "news.jsonl"
    with path.open("w", encoding="utf-8") as f:
        for i in range(40):
            if i == 17:
                f.write("\n")
                continue
            doc = {"id": i if i % 3 else f"doc-{i}", "text": " ".join(sentences[i % len(sentences) :][:2])}
            if i == 9:
                doc.update(text="Berlin ist die Hauptstadt von Deutschland.", lang="de")
            f.write(json.dumps(doc, ensure_ascii=False) + "\n")
    return path


@pytest.fixture(scope="module")
def want(corpus, tiny_demo, embedded_db_path, tmp_path_factory):
    """The mentions ``mluke link FILE --jsonl`` writes, as the distributed job's rows."""
    out = tmp_path_factory.mktemp("one-machine") / "linked.jsonl"
    link_corpus(corpus, out, "en", model=tiny_demo, db=embedded_db_path, progress=False, **SMALL)
    rows = []
    for record in map(json.loads, out.read_text(encoding="utf-8").splitlines()):
        for k, m in enumerate(record["mentions"]):
            if m["candidates"] is not None:
                m["candidates"] = json.dumps(m["candidates"], ensure_ascii=False)
            doc_id = record.get("id")
            doc_id = doc_id if doc_id is None or isinstance(doc_id, str) else json.dumps(doc_id)
            lang = record.get("lang", "en")
            rows.append({"source": corpus.name, "line": record["line"], "id": doc_id, "lang": lang, "mention": k, **m})
    return rows


def test_the_rows_follow_linked_mention():
    fields = list(LinkedMention.__dataclass_fields__)
    assert MENTION_SCHEMA.names[5:] == fields


@pytest.mark.parametrize("block", [7, 1 << 23])
@pytest.mark.parametrize(("lines", "shard_lines"), [(1, 3), (9, 3), (10, 3), (25, 4), (3, 100)])
def test_shards_read_the_documents_of_the_whole_file(tmp_path, monkeypatch, block, lines, shard_lines):
    monkeypatch.setattr(shards_module, "_BLOCK", block)  # a shard's edge inside a read block, and across blocks
    path = tmp_path / "c.jsonl"
    docs = ("\n" if i % 5 == 4 else json.dumps({"id": i, "text": "x" * i}) + "\n" for i in range(lines))
    path.write_text("".join(docs))
    files = dataset_files(path)
    shards = plan_shards(files, [line_starts(files[0], shard_lines)])
    assert len(shards) == max(1, -(-lines // shard_lines))
    got = [d for s in shards for d in read_shard(s, "en", Malformed())]
    assert got == list(iter_documents(path, "en", input_format="jsonl"))


def test_parquet_and_gzip_read_as_jsonl(tmp_path):
    docs = [{"id": f"d{i}", "text": f"text {i}", "lang": "de" if i == 3 else None} for i in range(12)]
    pq.write_table(pa.Table.from_pylist(docs), tmp_path / "a.parquet", row_group_size=5)
    with gzip.open(tmp_path / "b.jsonl.gz", "wt", encoding="utf-8") as f:
        f.writelines(json.dumps({k: v for k, v in d.items() if v is not None}) + "\n" for d in docs)
    files = dataset_files(tmp_path)
    assert [f.name for f in files] == ["a.parquet", "b.jsonl.gz"]
    shards = plan_shards(files, [line_starts(f, 4) for f in files])
    assert [(s.file.name, s.first_line, s.stop_line) for s in shards] == [
        ("a.parquet", 1, 5),
        ("a.parquet", 5, 9),
        ("a.parquet", 9, None),
        ("b.jsonl.gz", 1, 5),
        ("b.jsonl.gz", 5, 9),
        ("b.jsonl.gz", 9, None),
    ]
    read = [[(d.line, d.text, d.lang, d.id) for d in read_shard(s, "en", Malformed())] for s in shards]
    expected = [(i + 1, f"text {i}", "de" if i == 3 else "en", f"d{i}") for i in range(12)]
    assert read[0] + read[1] + read[2] == read[3] + read[4] + read[5] == expected


def test_bad_lines_are_counted_and_a_truncated_file_is_refused(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"text": "fine"}\nnot json\n{"id": 3}\n{"text": "also fine"}\n')
    malformed = Malformed()
    [shard] = plan_shards(dataset_files(path), [[(1, 0)]])
    assert [d.text for d in read_shard(shard, "en", malformed)] == ["fine", "also fine"]
    assert malformed.count == 2 and "c.jsonl, line 2" in malformed.examples[0]
    broken = tmp_path / "t.jsonl.gz"
    broken.write_bytes(gzip.compress(path.read_bytes() * 50)[:-30])
    [file] = dataset_files(broken)
    with pytest.raises(InputFormatError, match="t.jsonl.gz: unreadable or truncated"):
        line_starts(file, 10)
    [shard] = plan_shards([file], [[(1, 0)]])
    with pytest.raises(InputFormatError, match="t.jsonl.gz: unreadable or truncated"):
        list(read_shard(shard, "en", Malformed()))
    (tmp_path / "in-the-way").write_text("a file")
    with pytest.raises(OutputError, match="in-the-way is a file, not a folder"):  # before any work
        link_dataset(path, tmp_path / "in-the-way" / "out", progress=False)
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputFormatError, match="no dataset file"):
        dataset_files(tmp_path / "empty")
    with pytest.raises(InputFormatError, match="no such file or folder"):
        dataset_files(tmp_path / "missing.jsonl")


@pytest.fixture(scope="module")
def linked(cluster, corpus, tiny_demo, embedded_db_path, tmp_path_factory):
    """A job's output over the corpus with 2 workers, and what it reported."""
    out = tmp_path_factory.mktemp("linked") / "out"
    run = link_dataset(corpus, out, model=tiny_demo, db=embedded_db_path, workers=2, progress=False, **SMALL)
    return out, run


def test_two_workers_give_the_rows_of_mluke_link(linked, want):
    out, run = linked
    assert read_parts(out).to_pylist() == want
    assert (run.shards, run.documents, run.mentions) == (8, 39, len(want)) and len(run.worker_pids) == 2
    assert {r["lang"] for r in want} == {"en", "de"} and any(r["candidates"] for r in want)


def test_a_killed_worker_is_retried_without_duplicates(cluster, corpus, want, tiny_demo, embedded_db_path, tmp_path):
    killed = []

    def kill_first(done):
        if not killed:  # the worker that finished the first shard has another in flight: kill it
            killed.append(done.pid)
            os.kill(done.pid, signal.SIGKILL)

    run = link_dataset(
        corpus, tmp_path / "out", model=tiny_demo, db=embedded_db_path, progress=False, on_shard=kill_first, **SMALL
    )
    assert read_parts(tmp_path / "out").to_pylist() == want
    assert killed and killed[0] in run.worker_pids and len(run.worker_pids) == 3  # two workers and a restarted one
    assert len(list((tmp_path / "out").glob("part-*.parquet"))) == run.shards == 8


def test_a_stopped_job_resumes_and_another_job_is_refused(
    cluster, want, corpus, tiny_demo, embedded_db_path, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)  # relative paths: the workers get absolute ones
    shutil.copy(corpus, "corpus.jsonl")
    out = tmp_path / "out"
    job = {"model": tiny_demo, "db": embedded_db_path, "progress": False}

    def stop_after_three(done, seen=[]):  # noqa: B006  # counts across calls
        seen.append(done.number)
        if len(seen) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt, match="shards written to out are kept; run the same job again") as stop:
        link_dataset("corpus.jsonl", "out", **job, on_shard=stop_after_three, **SMALL)
    time.sleep(0.5)  # a worker still writing after the job returned would add a part now
    kept = len(list(out.glob("part-*.parquet")))
    assert 3 <= kept < 8 and f"the {kept} of 8 shards" in str(stop.value) and not (out / SUCCESS).exists()
    with pytest.raises(MlukeError, match="not a finished job"):
        read_parts(out)
    run = link_dataset("corpus.jsonl", "out", **job, **SMALL)
    assert (run.resumed, run.shards) == (kept, 8) and read_parts(out).to_pylist() == [
        {**row, "source": "corpus.jsonl"} for row in want
    ]
    with pytest.raises(OutputExistsError, match="another job .*options"):
        link_dataset("corpus.jsonl", "out", **job, **{**SMALL, "chunk_texts": 3})
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(OutputExistsError, match="not the output folder of an mluke job"):
        link_dataset(corpus, tmp_path / "mine", **job, **SMALL)
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"


def test_span_vectors_equal_one_machine(linked, corpus, tiny_demo, tmp_path):
    links = linked[0]
    settings = SpanSettings(features="entity", batch_size=4)
    run = span_vectors_dataset(corpus, links, tmp_path / "vectors", model=tiny_demo, settings=settings, progress=False)
    rows, vectors = read_span_vectors(tmp_path / "vectors")
    mentions = [m for m in read_parts(links).to_pylist() if m["key"] is not None and not m["nil"]]
    assert run.mentions == len(rows) == len(vectors) == len(mentions)
    docs = {d.line: d for d in iter_documents(corpus, "en")}
    expected = []
    for n in range(8):  # one span_vectors call per shard of 5 lines
        lines = sorted({m["line"] for m in mentions if (m["line"] - 1) // 5 == n})
        if lines:
            spans = [[(m["start"], m["end"]) for m in mentions if m["line"] == line] for line in lines]
            keys = [[m["key"] for m in mentions if m["line"] == line] for line in lines]
            texts = [docs[line].text for line in lines]
            expected.append(
                span_vectors(tiny_demo, texts, spans, features="entity", entities=keys, normalize=True, batch_size=4)
            )
    assert np.array_equal(vectors, np.concatenate(expected))
    index = span_index(tmp_path / "vectors", path=tmp_path / "spans.faiss")
    _, found = index.search(vectors[:3], 1)
    assert found[:, 0].tolist() == [0, 1, 2] and (tmp_path / "spans.faiss").stat().st_size > 0
    with pytest.raises(OutputExistsError):  # an existing index is kept
        span_index(tmp_path / "vectors", path=tmp_path / "spans.faiss")


def test_the_command_line(cluster, cli, corpus, tiny_demo, embedded_db_path, tmp_path):
    out = tmp_path / "out"
    args = ["distributed", "link", str(corpus), str(out), "--model", str(tiny_demo), "--db", str(embedded_db_path)]
    result = cli(*args, "--shard-lines", "20", "--no-progress")
    assert result.exit_code == 0, result.output
    assert "shards" in result.output and f"wrote {out}" in result.output
    assert pq.read_table(part_path(out, 1)).num_rows > 0
    again = cli(*args, "--shard-lines", "10", "--no-progress")
    assert isinstance(again.exception, OutputExistsError) and "another job" in again.exception.for_cli()
    assert "--overwrite" in again.exception.for_cli()
    assert "Ray" in cli("distributed", "--help").output
