"""Results: records -> pandas frames, Parquet/CSV export, Chrome trace, metrics and plots
(docs/architecture.md §4, docs/frames.md)."""
