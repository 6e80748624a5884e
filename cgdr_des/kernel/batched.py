"""The launch's numbers with every head of a sequence computed side by side.

At ``phase`` fidelity the machine replays each phase signature's compiled records, so per-(head,
chunk) numpy calls would dominate a run; here the same phase functions (phases.py, vtile.py, driven
by program.process_item) run once per chunk on a CoreState with one UB lane per value head. Every
head meets the same chunks, tiles and phases in the same order as on its own core, and each lane's
arithmetic is the one-lane arithmetic (chunk_math.py: stacked matmuls make the same BLAS call per
lane), so out and final_state are bit-identical to the per-core run's (tests/test_kernel_batched.py).

What this relies on: no phase reads UB a previous *item* left behind (each core's UB carries over
from its previous head, a lane's from the previous chunk of its own head only). The kernel zeroes or
rewrites what it reads, which the bit-identity tests check on every output shape the suite uses.
"""

from __future__ import annotations

from cgdr_des.blas import numeric_work
from cgdr_des.integers import ceil_div
from cgdr_des.kernel.launch import CoreState, Launch, should_split
from cgdr_des.kernel.program import ReuseStage, process_item


@numeric_work
def compute_numbers(launch: Launch) -> None:
    """Fill launch.out / final_state (and the workspace) for every (batch, head) item."""
    if launch.numerics == "off":
        return
    sh = launch.shape
    core = CoreState(launch, 0, emit=False, all_heads=True)
    numbers_only = ReuseStage(emit=False)
    tiles = range(ceil_div(sh.dv, core.v_step)) if should_split(launch) else (None,)
    seq0 = 0
    for b, seq_len in enumerate(map(int, launch.lengths)):
        for vt in tiles if seq_len else ():  # head 0 labels the chunks; core.lanes() names the heads
            for item in process_item(core, b, 0, seq0, seq0 + seq_len, vt):
                numbers_only(item)
        seq0 += seq_len
