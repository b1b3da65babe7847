#!/usr/bin/env bash
# Build llama.cpp's llama-server from the llama.cpp that our pinned llama-cpp-python ships, and serve the
# bundled model with it on 127.0.0.1 only (for `--backend openai` and the `server` test group).
#
#   scripts/llama-server.sh build            build once into the cache (about 6 minutes on 2 cores), then reuse it
#   scripts/llama-server.sh path             print the binary's path if it is built (exit 1 if not)
#   scripts/llama-server.sh serve [ARGS...]  build if needed, then run it in the foreground on 127.0.0.1:8080
#                                            with the bundled model; ARGS go to llama-server: -fa off --swa-full
#                                            to compute as in-process does (README), -c 8192 -np 2 for two
#                                            slots, --port 8081
#
# The cache lives outside the checkout: $RAGCLI_DEV_CACHE, default ~/.cache/ragcli-dev. The build reads the
# sdist of llama-cpp-python at the version pinned in pyproject.toml (`pip download --no-binary :all:`) and
# uses the same AVX2 flags as scripts/setup.sh (a -march=native build crashes on AMX Xeons with Q4_K_M
# models, ggml-org/llama.cpp#20824). Nothing in it downloads at build time: no curl, no OpenSSL, no web UI.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
version="$(sed -n 's/.*"llama-cpp-python==\([0-9.]*\)".*/\1/p' "$root/pyproject.toml" | head -n 1)"
[ -n "$version" ] || { echo "error: no llama-cpp-python==VERSION pin in pyproject.toml" >&2; exit 2; }
cache="${RAGCLI_DEV_CACHE:-$HOME/.cache/ragcli-dev}"
prefix="$cache/llama-server-$version"
bin="$prefix/bin/llama-server"
if [ -n "${PYTHON:-}" ]; then py="$PYTHON"
elif [ -x "$root/.venv/bin/python" ]; then py="$root/.venv/bin/python"
else py="python3"; fi

build() {
  [ -x "$bin" ] && return 0
  mkdir -p "$cache"
  # one build at a time (two test runs may both ask for it)
  exec 9>"$cache/.llama-server-$version.lock"
  flock 9
  [ -x "$bin" ] && return 0
  work="$(mktemp -d "$cache/build.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  local start=$SECONDS
  echo "building llama-server from llama-cpp-python==$version's llama.cpp into $prefix" >&2
  "$py" -m pip download --quiet --no-deps --no-binary :all: "llama-cpp-python==$version" -d "$work" >&2
  tar -xzf "$work/llama_cpp_python-$version.tar.gz" -C "$work" "llama_cpp_python-$version/vendor/llama.cpp"
  local src="$work/llama_cpp_python-$version/vendor/llama.cpp"
  local arch=()
  if [ "$(uname -m)" = "x86_64" ]; then
    arch=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON)
  fi
  local gen=()
  if command -v ninja >/dev/null; then gen=(-G Ninja); fi
  cmake -S "$src" -B "$work/build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release "${arch[@]}" \
    -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
    -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF >"$work/cmake.log" 2>&1 \
    || { tail -n 30 "$work/cmake.log" >&2; exit 1; }
  cmake --build "$work/build" --target llama-server -j "$(nproc)" >"$work/build.log" 2>&1 \
    || { tail -n 30 "$work/build.log" >&2; exit 1; }
  mkdir -p "$prefix/bin"
  cp "$work/build/bin/llama-server" "$bin.tmp"
  mv "$bin.tmp" "$bin"
  echo "built $bin in $((SECONDS - start)) s" >&2
}

model() {
  "$py" -c 'from ragcli.generation.llama import embedded_model_path; print(embedded_model_path())'
}

case "${1:-}" in
  build) build; echo "$bin" ;;
  path) [ -x "$bin" ] && echo "$bin" || { echo "not built: scripts/llama-server.sh build" >&2; exit 1; } ;;
  serve)
    shift
    build
    m="$(cd "$root" && PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}" model)"
    # --host last, so that no argument can open it beyond this machine
    exec "$bin" --port 8080 -m "$m" "$@" --host 127.0.0.1
    ;;
  *) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
