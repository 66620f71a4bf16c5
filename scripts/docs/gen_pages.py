"""Bring files kept outside ``docs/`` into the site at build time, so no page is a stale copy.

``benchmarks/RESULTS.md`` (the headline figures) becomes the Benchmarks page, its links into
``docs/benchmarks/`` (the topic pages) rewritten to be relative to the site; the notebooks are copied
under ``notebooks/`` for the Notebooks page to link to.
"""

from __future__ import annotations

from pathlib import Path

import mkdocs_gen_files

ROOT = Path(__file__).resolve().parents[2]

results = (ROOT / "benchmarks" / "RESULTS.md").read_text(encoding="utf-8")
# benchmarks/RESULTS.md links ../docs/benchmarks/x.md (right on GitHub); the page lands at docs/benchmarks.md
results = results.replace("](../docs/", "](")
with mkdocs_gen_files.open("benchmarks.md", "w") as out:
    out.write(results)
mkdocs_gen_files.set_edit_path("benchmarks.md", "../benchmarks/RESULTS.md")

for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
    with mkdocs_gen_files.open(f"notebooks/{notebook.name}", "wb") as out:
        out.write(notebook.read_bytes())
