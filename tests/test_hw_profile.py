"""Hardware profiles: shipped files load, every field is sourced, overrides and errors behave."""

import dataclasses
import pickle

import pytest

from cgdr_des.errors import InputError
from cgdr_des.hw import FIELD_NAMES, list_profiles, load_profile, with_overrides

SHIPPED = ["atlas-300i-duo", "atlas-a2-910b2", "atlas-a2-910b3", "atlas-a2-910b4"]


def test_the_four_profiles_are_listed():
    assert list_profiles() == sorted(SHIPPED)


@pytest.mark.parametrize("name", SHIPPED)
def test_every_field_has_value_source_and_confidence(name):
    p = load_profile(name)
    sources = p.field_sources()
    assert set(sources) == set(FIELD_NAMES)
    for field_name in FIELD_NAMES:
        assert getattr(p, field_name) is not None
        assert sources[field_name]["source"].strip()
        assert sources[field_name]["confidence"] in ("H", "M", "L")


def test_310p_facts_from_the_notes():
    p = load_profile("atlas-300i-duo")
    assert (p.aiv_num, p.clock_mhz, p.ub_bytes) == (8, 1060, 262144)
    assert p.gm_bytes_per_cycle == pytest.approx(204.8e9 / 1060e6)
    # 310P timing is not public: the carried-over 910B numbers must say so with confidence L
    for field_name in ("vec_delay_cycles", "dma_read_peak_per_cycle", "queue_depth", "scalar_alu_cycles"):
        assert p.field_sources()[field_name]["confidence"] == "L"


def test_double_set_policy_defaults():
    # 310P: the kernel's software flags (softsync) tolerate a re-set; 910B hardware flags do not
    assert load_profile("atlas-300i-duo").flag_double_set == "counter"
    assert {load_profile(n).flag_double_set for n in SHIPPED[1:]} == {"diagnostic"}


def test_910b_facts_from_the_notes():
    b2, b3, b4 = (load_profile(n) for n in SHIPPED[1:])
    assert (b2.aiv_num, b3.aiv_num, b4.aiv_num) == (48, 40, 40)
    assert (b2.clock_mhz, b4.clock_mhz) == (1800, 1650)
    assert b2.ub_bytes == 196608
    assert b2.dma_read_peak_per_cycle == pytest.approx(214e9 / 1.8e9, abs=0.05)
    assert b2.vec_width["Exp"]["fp32"] == 32 and b2.vec_width["Mul"]["fp16"] == 128
    assert b2.vec_cycles_per_repeat["WholeReduceSum"] == 7
    assert b2.vec_latency_cycles("Add", "fp32") == 6 + 15


def test_override_changes_value_and_marks_source():
    p = load_profile("atlas-300i-duo", {"clock_mhz": 1000, "vec_width": {"Mul": {"fp32": 32}}})
    assert p.clock_mhz == 1000.0
    assert p.vec_width["Mul"]["fp32"] == 32 and p.vec_width["Mul"]["fp16"] == 128   # merged, not replaced
    assert p.vec_width["Add"]["fp32"] == 64
    assert p.field_sources()["clock_mhz"]["source"] == "override"
    assert load_profile("atlas-300i-duo").clock_mhz == 1060    # the shipped profile is unchanged


def test_with_overrides_on_a_loaded_profile():
    p = with_overrides(load_profile("atlas-a2-910b2"), {"queue_depth": 4})
    assert p.queue_depth == 4 and p.aiv_num == 48


@pytest.mark.parametrize("overrides, field", [
    ({"clock_ghz": 1.0}, "overrides.clock_ghz"),
    ({"queue_depth": "32"}, "overrides.queue_depth"),
    ({"queue_depth": 0}, "overrides.queue_depth"),
    ({"aiv_num": True}, "overrides.aiv_num"),
    ({"dma_unaligned_efficiency": 1.5}, "overrides.dma_unaligned_efficiency"),
    ({"flag_double_set": "ignore"}, "overrides.flag_double_set"),
    ({"vec_width": {"Mul": {"fp32": 0}}}, "overrides.vec_width"),
])
def test_bad_override_is_an_input_error_naming_the_field(overrides, field):
    with pytest.raises(InputError) as exc:
        load_profile("atlas-300i-duo", overrides)
    assert exc.value.field == field
    assert field in str(exc.value) and "\n" not in str(exc.value)


def test_unknown_profile_lists_the_known_ones():
    with pytest.raises(InputError) as exc:
        load_profile("atlas-9000")
    msg = str(exc.value)
    assert "atlas-9000" in msg and all(name in msg for name in SHIPPED)


def test_profile_from_a_path_and_a_broken_file(tmp_path):
    src = load_profile("atlas-300i-duo")
    import importlib.resources as res
    text = (res.files("cgdr_des.hw") / "profiles" / "atlas-300i-duo.toml").read_text(encoding="utf-8")
    good = tmp_path / "mine.toml"
    good.write_text(text.replace("value = 1060", "value = 1000"), encoding="utf-8")
    assert load_profile(good).clock_mhz == 1000 and load_profile(good).aiv_num == src.aiv_num
    missing = tmp_path / "missing_field.toml"
    missing.write_text(text.replace("[fields.clock_mhz]", "[fields.clock_ghz]"), encoding="utf-8")
    with pytest.raises(InputError):
        load_profile(missing)


def test_profile_is_immutable_and_picklable():
    p = load_profile("atlas-300i-duo")
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.aiv_num = 16
    with pytest.raises(TypeError):
        p.vec_width["Mul"] = {"fp32": 1, "fp16": 1}
    q = pickle.loads(pickle.dumps(p))
    assert q == p and q.vec_width["Mul"]["fp32"] == 64


def test_a_profile_file_is_parsed_once_per_text_and_reread_when_it_changes(tmp_path):
    """load_profile keeps the Profile of each (text, origin) it parsed: the same file gives the same
    frozen object, an edited file its new values, and overrides a fresh profile that changes neither."""
    from importlib import resources

    text = (resources.files("cgdr_des.hw") / "profiles" / "atlas-300i-duo.toml").read_text(encoding="utf-8")
    path = tmp_path / "mine.toml"
    path.write_text(text)
    first = load_profile(path)
    assert load_profile(path) is first and first.clock_mhz == 1060
    path.write_text(text.replace("[fields.clock_mhz]\nvalue = 1060", "[fields.clock_mhz]\nvalue = 1000"))
    assert load_profile(path).clock_mhz == 1000
    bumped = load_profile(path, {"flag_cycles": first.flag_cycles + 1})
    assert bumped.flag_cycles == first.flag_cycles + 1 and load_profile(path).flag_cycles == first.flag_cycles


def test_the_parsed_document_is_shared_by_no_caller():
    """The TOML of a profile is parsed once and kept (a sweep builds a profile with overrides at every
    point); what read_doc hands out, and what an override of a nested table merges into, are copies:
    editing either changes no later load."""
    from cgdr_des.hw.profile import read_doc

    base = load_profile("atlas-300i-duo")
    doc, _ = read_doc("atlas-300i-duo")
    doc["fields"]["clock_mhz"]["value"] = 1
    doc["fields"]["vec_width"]["value"]["Mul"]["fp32"] = 1
    assert read_doc("atlas-300i-duo")[0]["fields"]["clock_mhz"]["value"] == base.clock_mhz == 1060
    wider = load_profile("atlas-300i-duo", {"vec_width": {"Mul": {"fp32": 128}}, "flag_cycles": 3})
    again = load_profile("atlas-300i-duo", {"flag_cycles": 3})
    assert wider.vec_width["Mul"]["fp32"] == 128 and wider.clock_mhz == 1060
    assert again.vec_width["Mul"]["fp32"] == base.vec_width["Mul"]["fp32"] == 64
    assert read_doc("atlas-300i-duo")[0]["fields"]["vec_width"]["value"]["Mul"]["fp32"] == 64
