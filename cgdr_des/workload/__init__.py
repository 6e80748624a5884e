"""Workloads: sequence-length distributions and files, and the seeded synthetic input tensors."""
