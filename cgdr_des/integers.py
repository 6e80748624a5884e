"""The integer helpers every layer shares: the host code's ``CeilDiv`` and ``CeilAlign`` (on Python
ints and on numpy integer arrays alike)."""

from __future__ import annotations


def ceil_div(a, b):
    """``ceil(a / b)`` in integers (the host's ``CeilDiv`` / ``DivCeil`` / ``Ceil``)."""
    return -(-a // b)


def ceil_align(a, b):
    """``a`` rounded up to a multiple of ``b`` (the host's ``CeilAlign``)."""
    return -(-a // b) * b
