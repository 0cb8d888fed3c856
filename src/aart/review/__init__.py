"""Human review in the browser (`aart review`): labels in run.db, judge calibration. The web
app (review.app, review.server) needs the `review` extra: starlette and uvicorn."""

from .session import Review, dataset_figures, open_review, verdict_figures

__all__ = ["Review", "dataset_figures", "open_review", "verdict_figures"]
