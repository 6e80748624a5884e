"""A deadlock reachable from a scenario file, reported end to end with what each pipe waits on.

On 310P the kernel's Set/WaitFlags are software flags that count (profile ``flag_double_set =
"counter"``): the kernel re-sets S_V(0) before V consumed the previous set (docs/hardware.md). With
bare one-bit hardware flags (``"lost"``) such a re-set is lost, V's matching WaitFlag waits for a set
that never comes, the scalar unit waits for V in turn, and nothing can ever move again.
"""

from __future__ import annotations

import tomllib

import pytest
from conftest import TINY
from test_bad_inputs import assert_refused, invoke

import cgdr_des
from cgdr_des.errors import KernelDiagnostic
from cgdr_des.scenario import Scenario

LOST = TINY + '\n[hardware.overrides]\nflag_double_set = "lost"\n'


def test_the_cli_reports_the_deadlock_in_one_line_naming_the_lost_set(tmp_path):
    path = tmp_path / "lost.toml"
    path.write_text(LOST, encoding="utf-8")
    res, elapsed = invoke("run", path, "--out", tmp_path / "out")
    line = assert_refused(res, elapsed, "deadlock: the program stopped with work left on core(s)")
    assert "V: waits in WaitFlag<S_V>" in line and "were lost" in line
    assert not (tmp_path / "out").exists()          # nothing half-written


def test_every_blocked_process_is_named():
    sc = Scenario.from_dict(tomllib.loads(LOST))
    with pytest.raises(KernelDiagnostic) as info:
        cgdr_des.simulate(sc)
    head, *rest = str(info.value).splitlines()
    blocked = [head.split(": ", 2)[2], *rest]           # "core C P: waits in ..."
    assert all(line.split()[2] in ("S:", "V:", "MTE2:", "MTE3:") for line in blocked)
    assert any(" V: waits in WaitFlag<S_V>" in line and "were lost" in line for line in blocked)
    assert any(" S: waits in WaitFlag<V_S>" in line for line in blocked)     # S waits for V in turn
    stuck = {int(c) for c in head.split("core(s) ")[1].split(":")[0].split(", ")}
    assert stuck == {int(line.split()[1]) for line in blocked}
