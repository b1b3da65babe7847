#!/usr/bin/env bash
# Create .venv and install ragcli (and, with --test, its test dependencies).
#
# llama-cpp-python builds from source (about 6 minutes on 2 cores; pip caches the wheel after the
# first build). On x86-64 it is built for AVX2 instead of -march=native: llama.cpp's AMX kernels,
# which a native build enables on recent Xeons, crash with Q4_K_M models (ggml-org/llama.cpp#20824).
# Set CMAKE_ARGS yourself to override (e.g. -DGGML_CUDA=on for an NVIDIA GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
extra=""
if [ "${1:-}" = "--test" ]; then extra="[test]"; fi
python3 -m venv .venv
if [ -z "${CMAKE_ARGS:-}" ] && [ "$(uname -m)" = "x86_64" ]; then
  export CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".${extra}"
echo "ragcli installed in .venv ($(.venv/bin/ragcli --version | head -n 1))"
