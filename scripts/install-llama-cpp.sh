#!/usr/bin/env bash
# Installs llama-cpp-python into the given venv, building it once per machine and caching the wheel.
# The default build targets the build machine's CPU (GGML_NATIVE) and crashes on CPUs with AMX, so it is built
# for the AVX2 baseline instead; --no-cache-dir keeps pip from reusing a wheel built natively elsewhere.
set -euo pipefail
pip="$1"
version="$2"
cache="${AXIOM_WHEEL_CACHE:-$HOME/.cache/axiom/wheels}"

find_wheel() { ls "$cache"/llama_cpp_python-"$version"-*.whl 2>/dev/null | head -n 1; }

wheel="$(find_wheel || true)"
if [ -z "$wheel" ]; then
  echo "Building llama-cpp-python $version (about 4 minutes, once per machine; cached in $cache)"
  mkdir -p "$cache"
  CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" \
    "$pip" wheel --no-deps --no-cache-dir -w "$cache" "llama-cpp-python==$version"
  wheel="$(find_wheel)"
fi
"$pip" install "$wheel"
