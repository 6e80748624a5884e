"""Machine throughput: simulated records per second against bare SimPy events per second.

The machine (fidelity ``instr``) should simulate at least as many instruction records per second as
a bare SimPy loop (``yield env.timeout(1)``) processes events in the same process: that is the
yardstick for "no SimPy event per instruction". Patterns (one core, synthetic, long):

- ``dotfp32``: Mul, WholeReduceSum, SetFlag<V_S>, WaitFlag<V_S>, Scalar ub_load x2 (kernel Phase 4:
  a V->S round trip per call);
- ``axpy_barrier``: Scalar ub_load, Axpy, PipeBarrier<V> (kernel Phase 5/6 rows, V serialised);
- ``axpy_s_to_v``: ub_load, SetFlag<S_V>, WaitFlag<S_V>, Axpy, PipeBarrier<V> (the kernel's exact
  pattern; run with flag_double_set="counter" because the scalar unit sets S_V again before V has
  consumed the previous set, which the default policy reports).

- ``kernel``: the real program of one core (the kernel layer's records for one 1024-token head:
  16 chunks of L = 64, dk = dv = 128, numerics off, 3.5 M records), built into a list first so
  only the machine is timed (the goal's figure: machine only);
- ``kernel_e2e``: the same program pulled from the kernel's generator while it runs (what an
  ``instr`` simulation with numerics off does end to end).

Each is timed with ops kept (default) and without (``keep_ops=False``); best of ``--repeat`` runs.
``events/rec`` is how many SimPy events the machine scheduled per record (counted in one extra,
untimed run): the cost of building the cores from SimPy processes is paid per blocking wait, and
this column shows how often each pattern blocks. ``simpy`` is that cost as a share of the time per
record, ``events/rec x (time per bare SimPy event) / (time per record)``: what the waits cost if
each costs what a bare event does (a wait's event is a SimPy event like the bare loop's; the rest is
the machine's own Python per record).

Usage: ``python analysis/benchmarks/bench_instr_throughput.py [--records 300000] [--repeat 3]``
"""

from __future__ import annotations

import argparse
import time

import simpy
import simpy.core

from cgdr_des.hw import Machine, load_profile
from cgdr_des.isa import PipeBarrier, Scalar, SetFlag, Tag, VecOp, WaitFlag


def dotfp32(n_records: int):
    yield Tag("P4a_DotFp32", 0, 0, -1, 0)
    body = (VecOp("Mul", "fp32", 128), VecOp("WholeReduceSum", "fp32", 128), SetFlag("V_S", 0),
            WaitFlag("V_S", 0), Scalar("ub_load", 2))
    for _ in range(n_records // len(body)):
        yield from body


def axpy_barrier(n_records: int):
    yield Tag("S4_VNew", 0, 0, -1, 0)
    body = (Scalar("ub_load"), VecOp("Axpy", "fp32", 128), PipeBarrier("V"))
    for _ in range(n_records // len(body)):
        yield from body


def axpy_s_to_v(n_records: int):
    yield Tag("S4_VNew", 0, 0, -1, 0)
    body = (Scalar("ub_load"), SetFlag("S_V", 0), WaitFlag("S_V", 0), VecOp("Axpy", "fp32", 128),
            PipeBarrier("V"))
    for _ in range(n_records // len(body)):
        yield from body


def _kernel_program():
    from cgdr_des.kernel.functional import make_launch
    from cgdr_des.kernel.launch import Shape
    from cgdr_des.kernel.program import core_program

    launch = make_launch(Shape(1, 1024, 1, 1, 128, 128, 0.088, False), [1024], None, None, numerics="off")
    return core_program(launch, 0)


_KERNEL: list = []


def kernel(_n_records: int):
    if not _KERNEL:
        _KERNEL.extend(_kernel_program())
    return iter(_KERNEL)


def kernel_e2e(_n_records: int):
    return _kernel_program()


PATTERNS = {"dotfp32": (dotfp32, {}), "axpy_barrier": (axpy_barrier, {}),
            "axpy_s_to_v": (axpy_s_to_v, {"flag_double_set": "counter"}), "kernel": (kernel, {}),
            "kernel_e2e": (kernel_e2e, {})}


def simpy_events_per_second(n_events: int) -> float:
    env = simpy.Environment()

    def loop(env):
        for _ in range(n_events):
            yield env.timeout(1)

    env.process(loop(env))
    t0 = time.perf_counter()
    env.run()
    return n_events / (time.perf_counter() - t0)


def records_per_second(pattern: str, n_records: int, keep_ops: bool) -> tuple[float, int]:
    make, overrides = PATTERNS[pattern]
    machine = Machine(load_profile("atlas-300i-duo", overrides or None), keep_ops=keep_ops)
    t0 = time.perf_counter()
    run = machine.run([make(n_records)])
    dt = time.perf_counter() - t0
    return run.cores[0]["n_records"] / dt, run.makespan


class _CountingEnvironment(simpy.Environment):
    """An Environment that counts the events scheduled on it (for the events/rec column only)."""

    scheduled = 0

    def schedule(self, event, priority=simpy.core.NORMAL, delay=0):
        _CountingEnvironment.scheduled += 1
        super().schedule(event, priority, delay)


def events_per_record(pattern: str, n_records: int) -> float:
    make, overrides = PATTERNS[pattern]
    machine = Machine(load_profile("atlas-300i-duo", overrides or None), keep_ops=False)
    real, simpy.Environment = simpy.Environment, _CountingEnvironment
    _CountingEnvironment.scheduled = 0
    try:
        run = machine.run([make(n_records)])
    finally:
        simpy.Environment = real
    return _CountingEnvironment.scheduled / run.cores[0]["n_records"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=300_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    bare = max(simpy_events_per_second(args.records) for _ in range(args.repeat))
    print(f"bare SimPy timeout loop: {bare:12,.0f} events/s")
    for pattern in PATTERNS:
        per_rec = events_per_record(pattern, args.records)
        for keep_ops in (True, False):
            best = max(records_per_second(pattern, args.records, keep_ops)[0] for _ in range(args.repeat))
            print(f"{pattern:13s} keep_ops={keep_ops!s:5s}: {best:12,.0f} records/s   ratio {best / bare:5.2f}"
                  f"   events/rec {per_rec:6.3f}   simpy {per_rec * best / bare:4.0%}")


if __name__ == "__main__":
    main()
