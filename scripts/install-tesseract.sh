#!/bin/sh
# Debian's Tesseract for OCR of scanned PDFs and images (backend/ingest/loaders/ocr.py runs it as a program), with
# the languages of the documents Axiom is tested on. Without it Axiom still runs: scans are refused with an error
# that says how to install it.
set -eu
LANGUAGES="eng fra deu ara jpn kor"
PACKAGES="tesseract-ocr"
for language in $LANGUAGES; do
    PACKAGES="$PACKAGES tesseract-ocr-$language"
done
if command -v tesseract >/dev/null 2>&1; then
    installed=$(tesseract --list-langs 2>/dev/null || true)
    missing=""
    for language in $LANGUAGES; do
        echo "$installed" | grep -qx "$language" || missing="$missing $language"
    done
    if [ -z "$missing" ]; then
        exit 0
    fi
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO=sudo
    else
        SUDO=none
    fi
fi
if ! command -v apt-get >/dev/null 2>&1 || [ "$SUDO" = none ]; then
    echo "WARNING: Tesseract is not installed and cannot be installed here (needs apt-get as root or with sudo)." >&2
    echo "Scanned PDFs and images will be refused until you install it, e.g.: apt-get install $PACKAGES" >&2
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
# Package lists may be missing or stale on a fresh machine: refresh them only when the first try fails.
# shellcheck disable=SC2086
$SUDO apt-get install -y --no-install-recommends $PACKAGES \
    || { $SUDO apt-get update && $SUDO apt-get install -y --no-install-recommends $PACKAGES; }
