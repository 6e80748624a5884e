"""The kernel layer: host tiling, UB layout, work distribution and the device program that computes
the real numbers and yields instruction records (docs/architecture.md §1, docs/kernel.md)."""
