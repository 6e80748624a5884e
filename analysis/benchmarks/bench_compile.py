"""Phase compilation of one 64-token chunk (dk = dv = 128, atlas-300i-duo): machine vs fast timer.

The kernel builds the chunk's phases once (numerics off; the records are captured, not compiled),
with its loops as isa.Repeat records as phase fidelity hands them over, and expanded (what instr
runs); then each PhaseCompiler compiles all of them from a fresh data cache: ``exact_machine=True``
times every compute run of the expanded records on the machine, the fast timer scans them once
(cgdr_des.hw.compute_run), and scans the Repeat form extrapolating steady loops. All three outputs
are checked equal; wall times are the best of a few repeats, measured side by side in this process.
The Repeat form's time includes building the loop bodies it walks (the other two get them built).
"""

from __future__ import annotations

from common import timed

from cgdr_des.hw import load_profile
from cgdr_des.hw.phase import PhaseCompiler, PhaseRecorder
from cgdr_des.isa import expand
from cgdr_des.kernel.functional import build_launch
from cgdr_des.kernel.program import core_program
from cgdr_des.simulation import CompileStage
from cgdr_des.workload.tensors import make_inputs

PROFILE, L, DK, DV, REPEAT = "atlas-300i-duo", 64, 128, 128, 5


def chunk_phases(prof) -> list[list]:
    x = make_inputs([L], 1, 1, DK, DV, seed=0)
    launch = build_launch(x.query, x.key, x.value, x.beta, x.initial_state, x.actual_seq_lengths, x.g,
                          x.scale_value, numerics="off", ub_size=prof.ub_bytes, aiv_num=prof.aiv_num)
    cap = PhaseRecorder(repeats=True)
    for _ in core_program(launch, 0, stage=CompileStage(cap)):
        pass
    return cap.phases


def compile_all(prof, phases, exact_machine: bool) -> list[list]:
    compiler = PhaseCompiler(prof, exact_machine=exact_machine)
    return [compiler.compile(p) for p in phases]


def main() -> None:
    prof = load_profile(PROFILE)
    looped = chunk_phases(prof)
    phases = [expand(p) for p in looped]
    n = sum(map(len, phases))
    t_machine, out_machine = timed(compile_all, prof, phases, True, repeat=REPEAT)
    t_fast, out_fast = timed(compile_all, prof, phases, False, repeat=REPEAT)
    t_loop, out_loop = timed(compile_all, prof, looped, False, repeat=REPEAT)
    assert out_fast == out_machine, "the fast timer and the machine disagree"
    assert out_loop == out_machine, "the Repeat form and the expanded records disagree"
    print(f"{len(phases)} phases, {n:,} records (one {L}-token chunk, dk={DK}, dv={DV}, {PROFILE}); "
          f"{sum(map(len, looped)):,} records with loops as Repeats")
    print(f"compile, machine path (exact_machine=True):     {t_machine:7.3f} s")
    print(f"compile, fast timer on the expanded records:    {t_fast:7.3f} s")
    print(f"compile, fast timer on the Repeat form (phase): {t_loop:7.3f} s")
    print(f"ratio machine / fast: {t_machine / t_fast:.2f}; fast expanded / Repeat form: {t_fast / t_loop:.2f}")


if __name__ == "__main__":
    main()
