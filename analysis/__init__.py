"""Analyses built on cgdr-des: speed benchmarks (``benchmarks/``) and the tail-latency study (``report/``)."""
