"""Moved to :mod:`aart.jobs.runner`; this name is kept for old imports."""

from .errors import Exported
from .jobs.runner import LEASE_SECONDS, POLL_SECONDS, JobStore, run_jobs, run_pool

__all__ = ["LEASE_SECONDS", "POLL_SECONDS", "Exported", "JobStore", "run_jobs", "run_pool"]
