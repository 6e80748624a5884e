"""cgdr-des: a discrete-event simulator of the vector-only chunk_gated_delta_rule kernel."""
