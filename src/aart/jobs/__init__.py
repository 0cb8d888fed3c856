"""The job system: jobs taken by lease from ``run.db`` and run by a bounded pool, in rounds
when their calls wait for batches."""
