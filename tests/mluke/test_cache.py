"""``mluke cache info`` / ``mluke cache clean``, and ``kb build --embedded`` keeping the cached kb."""

import os
import shutil
import sqlite3

from typer.testing import CliRunner

import kb
from kb.cache import mention_index_orphaned
from kb.mentions.index import MentionIndex
from kb.sources.embedded import embedded_path
from mluke.cache import cache_entries, clean_cache
from mluke.cli import app
from mluke.demo.model import DEMO_VERSION, demo_lock

runner = CliRunner()


def _home(tmp_path, monkeypatch, embedded_db_path):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("MLUKE_HOME", str(home))
    shutil.copyfile(embedded_db_path, embedded_path())
    return home


def _set_created(path, value):
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'created'", (value,))
    conn.close()


def test_info_and_clean_tell_used_from_unused(tmp_path, monkeypatch, embedded_db_path):
    home = _home(tmp_path, monkeypatch, embedded_db_path)
    other = tmp_path / "other.sqlite"
    shutil.copyfile(embedded_db_path, other)
    _set_created(other, "2000-01-01T00:00:00")
    used = MentionIndex.for_db(kb.EntityDB(embedded_path()), languages=["en"])
    rebuilt = MentionIndex.for_db(kb.EntityDB(other), languages=["en"])
    gone_db = tmp_path / "gone.sqlite"
    shutil.copyfile(embedded_db_path, gone_db)
    gone = MentionIndex.for_db(kb.EntityDB(gone_db), languages=["en"])
    _set_created(other, "2001-01-01T00:00:00")  # rebuilt since its index was made
    gone_db.unlink()
    (home / "embedded-kb-v1-f1.sqlite").write_bytes(b"old")  # an older version's kb
    (home / f"tiny-model-v{DEMO_VERSION}.work").mkdir()  # an interrupted training: resumable, kept
    (home / f"demo-model-v{DEMO_VERSION}.partial-999999999").mkdir()  # a killed export (no such process)
    (home / "demo-model-v3").mkdir()
    (home / "notes.txt").write_text("mine")

    status = {e.path.name: (e.status, e.why) for e in cache_entries()}
    assert status[used.path.name] == ("in use", "")
    assert status[rebuilt.path.name][0] == "orphaned" and "rebuilt" in status[rebuilt.path.name][1]
    assert status[gone.path.name][0] == "orphaned" and "no longer exists" in status[gone.path.name][1]
    assert status["embedded-kb-v1-f1.sqlite"][0] == "old version"
    assert status[embedded_path().name][0] == "in use"
    assert status[f"tiny-model-v{DEMO_VERSION}.work"][0] == "resumable"
    assert status[f"demo-model-v{DEMO_VERSION}.partial-999999999"][0] == "leftover"
    assert status["demo-model-v3"][0] == "old version"
    assert status["notes.txt"] == ("left alone", "not written by mluke; never removed")

    res = runner.invoke(app, ["cache", "info"])
    assert res.exit_code == 0, res.output
    assert "orphaned" in res.output and "5 unused" in res.output

    res = runner.invoke(app, ["cache", "clean", "--dry-run"])
    assert res.exit_code == 0 and "would remove 5 entries" in res.output and gone.path.exists()
    used.close(), rebuilt.close(), gone.close()
    res = runner.invoke(app, ["cache", "clean"])
    assert res.exit_code == 0 and "removed 5 entries" in res.output, res.output
    assert sorted(p.name for p in home.iterdir()) == sorted(
        [embedded_path().name, used.path.name, f"tiny-model-v{DEMO_VERSION}.work", "notes.txt"]
    )


def test_clean_all_keeps_a_training_that_is_running(tmp_path, monkeypatch, embedded_db_path):
    home = _home(tmp_path, monkeypatch, embedded_db_path)
    (home / f"tiny-model-v{DEMO_VERSION}.work").mkdir()
    (home / f"demo-model-v{DEMO_VERSION}.work").mkdir()
    with demo_lock(home / f"tiny-model-v{DEMO_VERSION}"):  # a process is training the tiny model
        assert {e.path.name: e.status for e in cache_entries()}[f"tiny-model-v{DEMO_VERSION}.work"] == "training"
        removed = {e.path.name for e in clean_cache(everything=True)}
    assert removed == {f"demo-model-v{DEMO_VERSION}.work", embedded_path().name}
    assert (home / f"tiny-model-v{DEMO_VERSION}.work").is_dir() and (home / f"tiny-model-v{DEMO_VERSION}.lock").exists()


def test_kb_build_embedded_keeps_the_cached_kb_and_its_indexes(tmp_path, monkeypatch, embedded_db_path):
    home = _home(tmp_path, monkeypatch, embedded_db_path)
    index = MentionIndex.for_db(kb.EntityDB(embedded_path()), languages=["en"])
    index.close()
    before = os.stat(embedded_path()).st_mtime_ns
    res = runner.invoke(app, ["kb", "build", "--embedded"])
    assert res.exit_code == 0 and "kept" in res.output and "--overwrite rebuilds it" in res.output
    assert os.stat(embedded_path()).st_mtime_ns == before and index.path.exists()
    res = runner.invoke(app, ["kb", "build", "--embedded", "--languages", "en,ja"])
    assert res.exception is not None and "--overwrite" in res.exception.for_cli()
    assert "other settings" in res.exception.for_cli() and os.stat(embedded_path()).st_mtime_ns == before
    res = runner.invoke(app, ["kb", "build", "--embedded", "--languages", "en,ja", "--overwrite"])
    assert res.exit_code == 0 and "wrote" in res.output
    assert kb.EntityDB(embedded_path()).languages == ("en", "ja")
    assert not index.path.exists()  # the replaced kb's index went with it, no orphan left
    assert not [p for p in home.glob("mentions-*.sqlite") if mention_index_orphaned(p)]


def test_imported_entity_vocabularies_are_recognised_and_cleaned(tmp_path, monkeypatch):
    import json

    from mluke.models.entity_vocab import VOCAB_FOLDER, load_entity_vocab

    home = tmp_path / "home"
    monkeypatch.setenv("MLUKE_HOME", str(home))
    checkpoint = tmp_path / "checkpoint"
    checkpoint.mkdir()
    vocab = {"[PAD]": 0, "[UNK]": 1, "[MASK]": 2, "[MASK2]": 3, "en:Tokyo": 4, "ja:東京": 4}
    (checkpoint / "entity_vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    loaded = load_entity_vocab(checkpoint)
    assert loaded is not None and loaded.path.parent == home / VOCAB_FOLDER
    loaded.close()
    (home / "notes.txt").write_text("mine")

    [entry] = [e for e in cache_entries() if e.path.name == VOCAB_FOLDER]
    assert (entry.kind, entry.status) == ("entity vocabularies imported from checkpoints (1)", "in use")
    assert "entity_vocab.json" in entry.why and entry.size > 0
    res = runner.invoke(app, ["cache", "info"])
    assert "entity vocabularies imported from checkpoints (1)" in res.output and "not written by mluke" in res.output
    assert not [line for line in res.output.splitlines() if "entity-vocab" in line and "not written" in line]

    assert clean_cache() == [] and (home / VOCAB_FOLDER).is_dir()  # in use: kept by a plain clean
    res = runner.invoke(app, ["cache", "clean", "--all"])
    assert res.exit_code == 0 and f"removed {VOCAB_FOLDER}" in res.output, res.output
    assert sorted(p.name for p in home.iterdir()) == ["notes.txt"]
    assert load_entity_vocab(checkpoint) is not None  # imported again when next needed
