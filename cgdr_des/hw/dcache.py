"""The scalar unit's data cache for GlobalTensor GetValue / SetValue (docs/hardware.md rows 16, 40).

Lines of ``line_bytes``; ``capacity_bytes / line_bytes`` of them, fully associative with LRU
replacement, write-allocate (a SetValue miss fetches the line like a GetValue: the cache is
write-back). The real DCache's associativity is not published: full associativity is the
optimistic choice. An access hits when every line it touches is resident.
"""

from __future__ import annotations

from collections import OrderedDict


class DataCache:
    def __init__(self, line_bytes: int, capacity_bytes: int) -> None:
        self.line_bytes = line_bytes
        self.n_lines = max(1, capacity_bytes // line_bytes)
        self.lines: OrderedDict[int, None] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def access(self, addr: int, nbytes: int) -> bool:
        """Touch ``[addr, addr + nbytes)``; return True on a hit. Updates LRU order and residency."""
        first = addr // self.line_bytes
        last = (addr + max(nbytes, 1) - 1) // self.line_bytes
        lines = self.lines
        hit = True
        for line in range(first, last + 1):
            if line in lines:
                lines.move_to_end(line)
            else:
                hit = False
                lines[line] = None
                if len(lines) > self.n_lines:
                    lines.popitem(last=False)
        if hit:
            self.hits += 1
        else:
            self.misses += 1
        return hit

    def hits_of(self, accesses) -> tuple[bool, ...]:
        """:meth:`access` each ``(addr, nbytes, ...)`` in order; which of them hit. (A hit within one
        resident line is handled inline: the phase compiler checks rows of 128 accesses this way.)"""
        lines, line_bytes, out, n_hit = self.lines, self.line_bytes, [], 0
        to_end = lines.move_to_end
        for acc in accesses:
            addr, nbytes = acc[0], acc[1]
            line, off = divmod(addr, line_bytes)
            if off + nbytes <= line_bytes and line in lines:
                to_end(line)
                n_hit += 1
                out.append(True)
            else:
                out.append(self.access(addr, nbytes))
        self.hits += n_hit
        return tuple(out)

    def pattern(self, accesses) -> bytes:
        """:meth:`access` each ``(addr, nbytes, ...)`` in order, as :meth:`hits_of` does; which of them
        hit, one byte (1 hit, 0 miss) per access: a compact key for the phase compiler. An access
        within the line the previous one ended in hits without an LRU update (that line is already
        the most recent), which keeps a row of 2-byte reads at one dictionary lookup per line."""
        line_bytes, out = self.line_bytes, bytearray(len(accesses))
        last, n_hit = -1, 0
        for k, acc in enumerate(accesses):
            addr, nbytes = acc[0], acc[1]
            line, off = divmod(addr, line_bytes)
            if line == last and off + nbytes <= line_bytes:
                out[k], n_hit = 1, n_hit + 1
                continue
            hit = self.access(addr, nbytes)
            out[k] = hit
            last = (addr + max(nbytes, 1) - 1) // line_bytes
        self.hits += n_hit
        return bytes(out)

    def state(self) -> tuple:
        """What the cache holds: its lines in LRU order and its hit / miss counters."""
        return self.lines.copy(), self.hits, self.misses

    def restore(self, saved: tuple) -> None:
        """Back to a :meth:`state`, in place (a scan holding ``lines`` keeps seeing the cache)."""
        lines, self.hits, self.misses = saved
        self.lines.clear()
        self.lines.update(lines)

    def hit_all(self, accesses) -> bool:
        """If every line of every ``(addr, nbytes, ...)`` access is resident: touch them in order and count
        each access a hit, as :meth:`access` would, and return True. Otherwise change nothing and return
        False (hits never evict, so residency checked up front holds for the whole sequence)."""
        lines, lb = self.lines, self.line_bytes
        spans = [(acc[0] // lb, (acc[0] + max(acc[1], 1) - 1) // lb) for acc in accesses]
        if not all(line in lines for first, last in spans for line in range(first, last + 1)):
            return False
        to_end = lines.move_to_end
        for first, last in spans:
            for line in range(first, last + 1):
                to_end(line)
        self.hits += len(spans)
        return True
