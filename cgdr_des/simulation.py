"""``simulate(scenario) -> Result``: scenario -> workload -> host tiling -> device programs -> machine.

Host tiling picks blockDim; blockDim cores start, each runs Process over the items its policy gives
it, all sharing GM; the outputs the programs compute come back assembled into out and final_state --
the same numbers the functional run computes, since both pull the same programs.
"""

from __future__ import annotations

from contextlib import nullcontext
from functools import partial

from cgdr_des import forked
from cgdr_des.blas import limits_blas
from cgdr_des.estimate import OPS_ROW_LIMIT
from cgdr_des.hw import Machine, load_profile
from cgdr_des.hw.costs import check_timing_fields
from cgdr_des.hw.phase import PhaseCompiler
from cgdr_des.integers import ceil_div
from cgdr_des.item_costs import launch_variant, measure_item_costs
from cgdr_des.kernel.batched import compute_numbers
from cgdr_des.kernel.dispatch import assign_items, compute_avgload
from cgdr_des.kernel.functional import build_launch, core_assignments, make_launch
from cgdr_des.kernel.launch import CHUNK_SIZE, Shape, should_split
from cgdr_des.kernel.output_check import check_outputs
from cgdr_des.kernel.policies import COST_POLICIES
from cgdr_des.kernel.program import ReuseStage, core_program
from cgdr_des.results.frames import build_result
from cgdr_des.workload.tensors import draw_g, make_inputs

#: Per-instruction ops rows are kept up to OPS_ROW_LIMIT (one row is ~200 bytes in memory); beyond it
#: only the per-phase spans are (the ops frame is then aggregated, and says so). Defined in estimate.py,
#: which predicts a run's memory without loading the simulation.
#: ops rows of one Cube-era chunk and V-tile at ``instr`` fidelity (about 9 000 records on the fast path)
CUBE_ROWS_PER_CHUNK = 9_000


class CompileStage(ReuseStage):
    """``phase`` fidelity's compile-and-cache stage between the programs and the machine.

    The first occurrence of each phase key (label and signature) is built, with its loops as
    isa.Repeat records if the compiler takes them, and handed to ``compiler.compile`` (the machine's
    PhaseCompiler: its scalar+vector runs timed once and replaced by Macros); later occurrences reuse
    the compiled records and only compute their numbers. What that loses is each later occurrence's
    own GM addresses (DMA alignment, data-cache lines) and ScalarExp arguments. One stage serves
    every core of a launch.

    ``per_core`` (launches that split V-tiles: sibling tiles on different cores read the same K and
    Q rows by scalar): each core keeps its own data cache, which every occurrence of a phase that
    reads GM by scalar passes through (such a phase is built each time), and a compiled phase is
    reused only where its accesses hit and miss alike (docs/architecture.md §2.5)."""

    emit = True

    def __init__(self, compiler, *, per_core: bool = False) -> None:
        self.compiler = compiler
        self.repeats = bool(getattr(compiler, "accepts_repeat", False))
        self.cache: dict[tuple, list] = {}
        self.per_core = per_core
        self.variants: dict[tuple, list] = {}   # (key, hit pattern) -> compiled, for per_core

    def first(self, key: tuple, records: list) -> list:
        """Compile a key's first occurrence and keep it for every later one."""
        compiled = self.cache[key] = self.compiler.compile(records)
        return compiled

    def for_core(self, core: int):
        """The stage core ``core``'s program uses: this one, or its per-core view."""
        return CoreCompileStage(self, core) if self.per_core else self


class CoreCompileStage(ReuseStage):
    """One core's view of a ``per_core`` :class:`CompileStage`: phases without a GM read by scalar
    are compiled once for every core, the others per (key, hit pattern) against the core's cache."""

    emit = True

    def __init__(self, stage: CompileStage, core: int) -> None:
        self.stage, self.core = stage, core
        self.repeats = stage.repeats
        self.cache = stage.cache

    def __call__(self, item):
        if type(item) is list:      # the scan's length reads go through the core's cache too
            self.stage.compiler.touch(item, self.core)
            return item
        return super().__call__(item)

    def first(self, key: tuple, records: list) -> list:
        pattern, compile_here = self.stage.compiler.occurrence(records, self.core)
        if pattern is None:
            compiled = self.cache[key] = compile_here()
            return compiled
        compiled = self.stage.variants.get((key, pattern))
        if compiled is None:
            compiled = self.stage.variants[(key, pattern)] = compile_here()
        return compiled


def _tensors(sc, lengths):
    """The launch's tensors (None for a timing-only run, which needs only g)."""
    s, w = sc.shape, sc.workload
    if sc.sim.numerics == "off":
        g = draw_g(int(lengths.sum()), s.nv, w.seed) if s.has_gamma else None
        return None, g, s.resolved_scale()
    x = make_inputs(lengths, s.nk, s.nv, s.dk, s.dv, seed=w.seed, has_gamma=s.has_gamma,
                    beta=w.tensors.beta, initial_state=w.tensors.initial_state)
    tensors = dict(query=x.query, key=x.key, value=x.value, beta=x.beta, initial_state=x.initial_state)
    return tensors, x.g, s.resolved_scale()


def estimated_rows(launch, fidelity: str) -> int:
    """Order of magnitude of the ops rows a run produces: at ``instr`` ~2.3 L^2 + 6.6 L dk records per
    chunk and V-tile (docs/kernel.md §5.x), at ``phase`` ~100 (Macros, DMAs, flags, Tags)."""
    sh = launch.shape

    def per_chunk(L: int) -> int:
        """Estimated ops rows of one chunk of ``L`` tokens for one V-tile."""
        return 100 if fidelity == "phase" else int(2.3 * L * L) + int(6.6 * L * sh.dk)

    cs = CHUNK_SIZE
    total = sum((n // cs) * per_chunk(cs) + (per_chunk(n % cs) if n % cs else 0) for n in map(int, launch.lengths))
    total *= ceil_div(sh.dv, launch.tiling.v_step)
    return total * sh.nv


@limits_blas
def simulate(scenario, *, progress=None, blas_threads=None, keep_ops=None):
    """Run one scenario; ``progress(done, total)`` is called as work items start. ``blas_threads``:
    BLAS threads during the run (None: ``CGDR_DES_BLAS_THREADS`` or 1; 0 or ``"default"``: the
    caller's), the caller's setting restored afterwards (cgdr_des/blas.py). ``keep_ops``: a row per
    operation in the ops frame or not (None: the scenario's ``[sim] ops``), for a caller that reads
    other frames only and keeps the scenario (and its hash) as it is."""
    sc = scenario
    keep_ops = sc.sim.ops if keep_ops is None else keep_ops
    prof = load_profile(sc.profile_ref(), dict(sc.hardware.overrides))
    lengths = sc.lengths()
    tensors, g, scale = _tensors(sc, lengths)
    s = sc.shape
    shape = Shape(int(lengths.size), int(lengths.sum()), s.nk, s.nv, s.dk, s.dv, scale, s.has_gamma)
    meta = {"scenario_name": sc.name, "scenario_hash": sc.scenario_hash(), "hardware": prof.name}
    if sc.kernel.kernel_version != "vector":
        from cgdr_des.kernel.cube.launch import make_cube_launch

        launch = make_cube_launch(shape, lengths, g, tensors, numerics=sc.sim.numerics, ub_size=prof.ub_usable_bytes,
                                  aiv_num=prof.aiv_num, kernel_version=sc.kernel.kernel_version)
        return run_cube_launch(launch, prof, policy=sc.kernel.policy, fidelity=sc.sim.fidelity, meta=meta,
                               progress=progress, scenario=sc, keep_ops=keep_ops)
    launch = make_launch(shape, lengths, g, tensors, numerics=sc.sim.numerics, ub_size=prof.ub_usable_bytes,
                         aiv_num=prof.aiv_num, **sc.kernel.tiling_options())
    return run_launch(launch, prof, policy=sc.kernel.policy, fidelity=sc.sim.fidelity, meta=meta,
                      progress=progress, scenario=sc, keep_ops=keep_ops)


def run_launch(launch, prof, *, policy, fidelity, meta=None, progress=None, scenario=None, batched_numbers=True,
               keep_ops=True, processes=1):
    """Time one launch on the machine and build the Result (shared by simulate and the op API).

    At ``phase`` fidelity the outputs come from the head-batched pass (kernel/batched.py: the same
    phase functions, bit-identical numbers) and the programs only emit records, since replayed
    phases would otherwise spend most of the run in per-(head, chunk) numpy calls; at ``instr`` each
    phase computes its numbers as the program reaches it. ``batched_numbers`` False forces the
    latter at ``phase`` too (the tests compare the two). ``keep_ops`` False keeps no per-op rows (the
    ops frame aggregated per span, as beyond :data:`OPS_ROW_LIMIT`): every other frame and every cycle
    the same, about a third less CPU at ``instr`` (``[sim] ops``; the calibrations, which read items
    and cores only). ``processes`` 2 computes the head-batched numbers in a forked child while this
    process replays the timing (cgdr_des/forked.py; the op call's default where it can fork)."""
    assignment = assign_items(launch.lengths, launch.shape.nv, launch.shape.dv, launch.tiling.v_step,
                              launch.block_dim, policy, item_cost=_item_cost(launch, prof, policy))
    total = sum(len(a) for a in assignment)
    started = [0]

    def on_item(_key):
        """Count one started work item and report progress."""
        started[0] += 1
        if progress is not None:
            progress(started[0], total)

    keep_ops = keep_ops and estimated_rows(launch, fidelity) <= OPS_ROW_LIMIT
    launch.raw_interlock = check_timing_fields(prof, fidelity)
    numbers_apart = fidelity == "phase" and batched_numbers and launch.numerics != "off"
    stage = CompileStage(PhaseCompiler(prof), per_core=should_split(launch)) if fidelity == "phase" else ReuseStage()
    with _numbers(launch, numbers_apart, processes):
        programs = [core_program(launch, i, numbers=not numbers_apart, assigned=assigned, on_item=on_item,
                                 stage=stage.for_core(i) if fidelity == "phase" else stage)
                    for i, assigned in enumerate(core_assignments(launch, policy, assignment))]
        run = Machine(prof, keep_ops=keep_ops).run(programs)
    if progress is not None:
        progress(total, total)
    per_head = launch.tiling.v_tile_count if should_split(launch) else 1
    avgload = compute_avgload(launch.lengths, launch.shape.nv, per_head, launch.block_dim)
    meta = {**(meta or {}), "policy": policy, "buffer_num": launch.tiling.buffer_num, "fidelity": fidelity,
            "numerics": launch.numerics, "avgload": avgload, "block_dim": launch.block_dim,
            "v_step": launch.tiling.v_step, "ops_kept": keep_ops}
    meta.update(check_outputs(launch, scenario))
    outputs = {"out": launch.out, "final_state": launch.final_state}
    return build_result(run, assignment, meta=meta, clock_mhz=prof.clock_mhz, outputs=outputs,
                        scenario=scenario, tiling=launch.tiling)


#: chunk items (chunks x heads x V-tiles) from which the numbers in a forked child save more than the
#: fork costs (analysis/benchmarks/bench_forked_numbers.py)
FORK_MIN_ITEMS = 64


def fork_pays(launch) -> bool:
    """True where the op's ``"auto"`` computes a launch's numbers in a forked child: it can fork
    (cgdr_des/forked.py) and the launch has numbers and at least :data:`FORK_MIN_ITEMS` chunk items."""
    if launch.numerics == "off" or not forked.can_fork():
        return False
    return chunk_items(launch) >= FORK_MIN_ITEMS


def chunk_items(launch) -> int:
    """The launch's (chunk, head, V-tile) items: every chunk of every sequence, per head and V-tile."""
    chunks = sum(ceil_div(int(n), CHUNK_SIZE) for n in launch.lengths)
    return chunks * launch.shape.nv * launch.tiling.v_tile_count


def _numbers(launch, numbers_apart: bool, processes: int):
    """The head-batched numbers, before the replay (returns a no-op block) or, ``processes`` 2, in a
    forked child beside it (cgdr_des/forked.py), their outputs in ``launch`` when the block ends."""
    if numbers_apart and processes > 1 and forked.can_fork(asked=True):
        return forked.beside(partial(compute_numbers, launch), launch, ("out", "final_state", "workspace"))
    if numbers_apart:
        compute_numbers(launch)
    return nullcontext()


def run_cube_launch(launch, prof, *, policy, fidelity, meta=None, progress=None, scenario=None, keep_ops=True):
    """Time one Cube-era launch (kernel_version cube / cube-pre1174) and build the Result: its numbers
    computed apart (kernel/cube/numerics.py), its programs (kernel/cube/program.py) on the machine."""
    from cgdr_des.kernel.cube import numerics as cube_numerics
    from cgdr_des.kernel.cube import program as cube_program

    assignment = cube_program.assign_items(launch, policy)
    total, started = sum(len(a) for a in assignment), [0]

    def on_item(_key):
        started[0] += 1
        if progress is not None:
            progress(started[0], total)

    launch.raw_interlock = check_timing_fields(prof, fidelity)
    cube_numerics.compute_outputs(launch)
    stage = CompileStage(PhaseCompiler(prof)) if fidelity == "phase" else ReuseStage()
    programs = [cube_program.core_program(launch, i, assigned=assigned, on_item=on_item, stage=stage)
                for i, assigned in enumerate(cube_program.core_assignments(launch, policy, assignment))]
    t = launch.tiling
    rows = chunk_items(launch) * (CUBE_ROWS_PER_CHUNK if fidelity == "instr" else CUBE_ROWS_PER_CHUNK // 3)
    keep_ops = keep_ops and rows <= OPS_ROW_LIMIT
    run = Machine(prof, keep_ops=keep_ops).run(programs)
    if progress is not None:
        progress(total, total)
    per_head = t.v_tile_count if t.split else 1
    meta = {**(meta or {}), "policy": policy, "buffer_num": 1, "fidelity": fidelity, "numerics": launch.numerics,
            "avgload": compute_avgload(launch.lengths, launch.shape.nv, per_head, launch.block_dim),
            "block_dim": launch.block_dim, "v_step": t.v_step, "ops_kept": keep_ops,
            "kernel_version": t.kernel_version, "cube_bucket": t.bucket, "tiling_key": t.tiling_key}
    meta.update(cube_numerics.check_finite(launch, scenario))
    return build_result(run, assignment, meta=meta, clock_mhz=prof.clock_mhz,
                        outputs={"out": launch.out, "final_state": launch.final_state}, scenario=scenario, tiling=t)


def _item_cost(launch, prof, policy):
    """The calibrated item-cost model a cost-weighted policy dispatches by (None for token policies)."""
    if policy not in COST_POLICIES:
        return None
    sh = launch.shape
    costs = measure_item_costs(prof, sh.nk, sh.nv, sh.dk, sh.dv, sh.has_gamma, launch.tiling.buffer_num, run_launch,
                               launch_variant(launch))
    return costs.item_cycles


def simulate_launch(query, key, value, beta, initial_state, actual_seq_lengths, g, scale_value, *,
                    numerics, hardware, buffer_num, policy, fidelity, processes=1):
    """The op API's timed path: same launch as the functional run, then the machine. Returns the
    launch (its out and final_state filled in) and the Result. ``processes``: 1, 2 or ``"auto"``
    (:func:`fork_pays`)."""
    prof = load_profile(hardware)
    launch = build_launch(query, key, value, beta, initial_state, actual_seq_lengths, g, scale_value,
                          numerics=numerics, ub_size=prof.ub_usable_bytes, aiv_num=prof.aiv_num, buffer_num=buffer_num)
    if processes == "auto":
        processes = 2 if fork_pays(launch) else 1
    result = run_launch(launch, prof, policy=policy, fidelity=fidelity, processes=processes,
                        meta={"scenario_name": "api", "scenario_hash": "", "hardware": prof.name})
    return launch, result
