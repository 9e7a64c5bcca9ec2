#!/usr/bin/env bash
# Installs NVRTC 13.0 (the GPU machine's version: its 580 driver rejects PTX from a newer NVRTC)
# from its Python wheel, so machines without a GPU or CUDA toolkit can compile every kernel.
# Prints the folder to put on LD_LIBRARY_PATH. Usage:
#   export LD_LIBRARY_PATH=$(scripts/nvrtc-for-ci.sh)
set -euo pipefail
dir=${NVRTC_DIR:-${TMPDIR:-/tmp}/tessera-nvrtc}
lib="$dir/nvidia/cu13/lib"
if [ ! -e "$lib/libnvrtc.so.13" ]; then
  python3 -m pip install -q --disable-pip-version-check --no-deps --target "$dir" nvidia-cuda-nvrtc==13.0.88 >&2
fi
# The wheel ships libnvrtc.so.13 and its builtins; cudarc's dynamic loader looks for libnvrtc.so
# under a few names, so give it the unversioned one too.
[ -e "$lib/libnvrtc.so" ] || ln -sf libnvrtc.so.13 "$lib/libnvrtc.so" 2>/dev/null || true
echo "$lib"
