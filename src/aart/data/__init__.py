"""Dataset files: reading them (:mod:`.load`), writing JSONL/CSV/Parquet (:mod:`.export`) and
the streaming counters used over them (:mod:`.stream`)."""
