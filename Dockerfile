# syntax=docker/dockerfile:1
# Axiom's image, installed by the project's own `make setup` (the same commands as on a laptop; tests/test_deploy.py
# holds the two together). Two stages: the build one has the compilers the one-time llama-cpp-python build needs,
# the image that runs keeps only the virtualenv and the code. docker-compose.yml runs it; docs/deploy.md explains.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
# make runs the setup; a C/C++ compiler and CMake build llama-cpp-python (scripts/install-llama-cpp.sh).
RUN apt-get update \
    && apt-get install -y --no-install-recommends build-essential cmake \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
# Only what `make setup` reads, and the package's top module: a change to the code then reuses the installed
# dependencies (the editable install maps `backend` to /app/backend, where the final stage puts the code).
COPY pyproject.toml Makefile README.md ./
COPY scripts/ scripts/
RUN mkdir backend && touch backend/__init__.py
# The sentence-transformers extra pins torch; PyPI's Linux build of it pulls multi-GB CUDA libraries, the PyTorch
# index has the CPU build of the same version.
ENV PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu
# The cache keeps pip's downloads and the llama-cpp-python wheel (~/.cache/axiom/wheels) between builds.
RUN --mount=type=cache,target=/root/.cache make setup

FROM ${PYTHON_IMAGE}
# llama.cpp's libraries use OpenMP (the build stage had libgomp through the compiler).
RUN apt-get update \
    && apt-get install -y --no-install-recommends libgomp1 \
    && rm -rf /var/lib/apt/lists/*
RUN useradd --system --create-home --home-dir /home/axiom axiom
WORKDIR /app
COPY --from=build /app/.venv /app/.venv
COPY . /app
# Text recognition of scans and images: Debian's Tesseract, as `make run` installs it.
RUN scripts/install-tesseract.sh && rm -rf /var/lib/apt/lists/*
# data/ holds what a replica keeps for itself (caches; everything shared lives in PostgreSQL and Chroma).
RUN mkdir -p /app/data && chown axiom:axiom /app/data
USER axiom
ENV PATH=/app/.venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    AXIOM_DATA_DIR=/app/data
EXPOSE 8000
# Any address but loopback needs AXIOM_AUTH (api-key, or none to say the port is open on purpose).
CMD ["axiom", "serve", "--host", "0.0.0.0", "--port", "8000"]
