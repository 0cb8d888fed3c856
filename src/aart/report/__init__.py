"""Reports: self-contained HTML (inline SVG, no external assets) and Markdown summaries."""

from .evaluation import evaluation_html, evaluation_markdown, write_evaluation_report

__all__ = ["evaluation_html", "evaluation_markdown", "write_evaluation_report"]
