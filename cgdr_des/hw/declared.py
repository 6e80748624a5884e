"""What a Repeat's declared work costs the scalar unit: its ScalarGm accesses (``Repeat.gm``) through the
data cache, its ScalarExp calls (``Repeat.exp``) from the ALU and division work they declare, and the
scalar lead of its body. The one-pass timer (:mod:`cgdr_des.hw.compute_run`, "Repeat") asks these of
the iterations it adds without walking them, and of the one it walked to compare them with."""

from __future__ import annotations

import numpy as np

from cgdr_des.errors import KernelDiagnostic
from cgdr_des.hw.dcache import L2_HIT
from cgdr_des.hw.profile import Profile
from cgdr_des.hw.rules import scalar_exp
from cgdr_des.isa import GmRows, GmStrided, Repeat, Scalar


class DeclaredCosts:
    """A profile's costs of declared work; ``gm_cost`` is the timer's ScalarGm table
    (``[store][outcome]``), ``scalar_kinds`` its cycles per Scalar kind."""

    def __init__(self, profile: Profile, gm_cost: list, scalar_kinds: dict) -> None:
        self.profile, self.gm_cost, self.scalar_kinds = profile, gm_cost, scalar_kinds

    def exp_costs(self, rep: Repeat, i: int) -> tuple:
        """The cycles of iteration i's declared ScalarExp calls."""
        return tuple(work_cycles(w, self.profile) for w in rep.exp(i)) if rep.exp is not None else ()

    def gm_cycles(self, accesses, outcomes: bytes) -> int:
        """What ScalarGm ``accesses`` ((addr, nbytes, store) each) cost S, given how each went
        (:meth:`~cgdr_des.hw.dcache.DataCache.pattern`'s bytes)."""
        cost = self.gm_cost
        return sum([cost[store][o] for (_, _, store), o in zip(accesses, outcomes, strict=True)])

    def row_cycles(self, outcomes: bytes, store: bool) -> int:
        """What accesses of one kind (all loads or all stores) cost S, given how each went: the
        outcomes counted, not costed one by one."""
        cost = self.gm_cost[store]
        return outcomes.count(1) * cost[1] + outcomes.count(0) * cost[0] + outcomes.count(L2_HIT) * cost[L2_HIT]

    def gm(self, gm, k: int, dcache) -> int:
        """The cycles of iteration k's declared ScalarGm accesses, the cache touched for them in order; a
        :class:`~cgdr_des.isa.GmRows` row through :meth:`~cgdr_des.hw.dcache.DataCache.pattern_row` and
        its outcomes counted, rather than a tuple built and costed per access."""
        if type(gm) is GmRows:
            return self.row_cycles(dcache.pattern_row(gm.row(k), gm.nbytes), gm.store)
        accesses = gm(k)
        return self.gm_cycles(accesses, dcache.pattern(accesses))

    def gm_span(self, gm, first: int, stop: int, dcache) -> int:
        """:meth:`gm` of iterations ``first`` .. ``stop - 1`` added up, the cache touched for them in order.
        A :class:`~cgdr_des.isa.GmRows` or :class:`~cgdr_des.isa.GmStrided` loop goes through
        :meth:`~cgdr_des.hw.dcache.DataCache.pattern_of` in one call: the same outcomes as iteration by
        iteration, since an access that only a call's start looks up lies within the line the previous
        iteration ended in, the most recent one (a hit that moves nothing)."""
        if stop - first < 2 or type(gm) not in (GmRows, GmStrided):
            return sum(self.gm(gm, k, dcache) for k in range(first, stop))
        if type(gm) is GmStrided:
            addr = np.arange(first, stop, dtype=np.int64) * gm.step + gm.start
        else:
            addr = np.concatenate([np.arange(r.start, r.stop, r.step, dtype=np.int64)
                                   for r in map(gm.row, range(first, stop))])
        return self.row_cycles(dcache.pattern_of(addr, gm.nbytes), gm.store)

    @staticmethod
    def goes_as(gm, k: int, dcache, want: bytes) -> bool:
        """Whether iteration k's declared ScalarGm accesses would go as ``want`` says (outcome bytes, as
        :meth:`~cgdr_des.hw.dcache.DataCache.pattern` gives them): if so the cache is touched for them
        (True), else left as it was. A :class:`~cgdr_des.isa.GmRows` row is read as a range, its
        accesses within the line the previous one ended in skipped at once."""
        if type(gm) is GmRows:
            return dcache.row_goes_as(gm.row(k), gm.nbytes, want)
        accesses = gm(k)
        if want.count(1) == len(want):      # all hits: checked without touching, then touched
            return dcache.hit_all(accesses)
        return dcache.pattern_if(accesses, want)

    def walked(self, rep: Repeat, i: int, seen: list | None) -> tuple | None:
        """The declared costs the walked iteration i met: (ScalarExp cycles, which accesses hit); None
        if its ScalarGm records were not the ones it declares one for one."""
        exp = self.exp_costs(rep, i)
        if rep.gm is None:
            return exp, ()
        gm = rep.gm
        n = len(gm.row(i)) if type(gm) is GmRows else len(gm(i))
        return (exp, bytes(seen)) if len(seen) == n else None

    def scalar_lead(self, rep: Repeat, body: list) -> int | None:
        """The cycles of ``body``'s leading Scalar records other than ScalarExp calls, if those records
        hold every ScalarExp call of the body (None otherwise, or if the Repeat declares none)."""
        if rep.exp is None:
            return None
        kc, cycles, j = self.scalar_kinds, 0, 0
        while j < len(body) and type(body[j]) is Scalar:
            rec = body[j]
            if rec.kind != "exp":
                if rec.kind not in kc:
                    return None
                cycles += kc[rec.kind] * rec.count
            j += 1
        if any(type(r) is Repeat or (type(r) is Scalar and r.kind == "exp") for r in body[j:]):
            return None
        return cycles


def exp_cycles(rec: Scalar, profile: Profile) -> int:
    """The cycles of a ScalarExp record (``count`` calls of its declared work); KernelDiagnostic for a
    Scalar kind with no cost, or a call declaring no work."""
    if rec.kind != "exp":
        raise KernelDiagnostic(f"Scalar kind {rec.kind!r} has no cost")
    if rec.alu <= 0 and rec.div <= 0:
        raise KernelDiagnostic(f"Scalar exp(arg={rec.arg}) declares no ALU or division work")
    return rec.count * work_cycles((rec.alu, rec.div), profile)


def work_cycles(work: tuple[int, int], profile: Profile) -> int:
    """Cycles of one ScalarExp call declaring ``work`` = (ALU operations, divisions)."""
    alu_ops, div_ops = work
    return scalar_exp(alu_ops, div_ops, profile.scalar_alu_cycles, profile.scalar_div_cycles)
