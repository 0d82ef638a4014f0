"""Parameters are declared where the workload is registered (issue 39 item 2).

Every workload module found by the package scan registers; every workload declares its
parameters (catalogue names with its defaults) and reads them through the one typed accessor,
never with a default of its own; epsilon has one default; a parameter of another protocol is
refused naming the workload and what it takes; the privacy statement is one record whose field
names say what each value means, published under the unchanged wire keys.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from protocols.params import CATALOGUE, EPSILON_DEFAULT, ParamError, Values, declare
from protocols.privacy.record import SEED000, UNSTATED, PrivacyStatement
from protocols.workloads import (
    DECLARED,
    SUMMARIES,
    WORKLOADS,
    check_params,
    get_workload,
    pinned_defaults,
    registered,
    workload_modules,
)

ROOT = Path(__file__).resolve().parents[1]


def test_every_workload_module_found_by_the_scan_registers():
    mods = workload_modules()
    # the scan finds the per-family modules, whatever they are called (workload, workloads,
    # fe1_workload), and nothing else
    assert {"protocols.grr.workload", "protocols.multidim.workloads"} <= set(mods)
    assert "protocols.almost_single.fe1_workload" in mods
    assert all(re.fullmatch(r"protocols\.\w+\.\w*workload\w*", m) for m in mods), mods
    on_disk = {
        f"protocols.{p.parent.name}.{p.stem}" for p in (ROOT / "protocols").glob("*/*workload*.py")
    }
    assert set(mods) == on_disk
    names = registered()
    for mod in mods:
        importlib.import_module(mod)
        assert any(fn.__module__ == mod for fn in names.values()), f"{mod} registers nothing"
    # every documented protocol is registered, and every registered one is declared
    assert set(SUMMARIES) <= set(names)
    assert set(names) == set(DECLARED)


def _workload_files() -> list[Path]:
    return [ROOT / (m.replace(".", "/") + ".py") for m in workload_modules()]


def test_no_factory_reads_a_parameter_with_its_own_default():
    """The grep: no ``params.get(...)``/``params[...]`` nor a read of the raw mapping
    (``p.raw.get``, ``p.raw[...]``) in a workload module: a value comes from the typed accessor
    and its default from the declaration at registration."""
    bad = re.compile(r"\b(params|raw)\.get\(|\b(params|raw)\[|getattr\(p,")
    hits = []
    for path in _workload_files():
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if bad.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()}")
    assert not hits, "\n".join(hits)


def test_every_registration_declares_its_parameters():
    text = "\n".join(p.read_text() for p in _workload_files())
    assert not re.search(r"register\(\s*[\"'_\w]+\s*\)", text), "a registration without params="
    for name, d in DECLARED.items():
        assert d.workload == name
        assert set(d.defaults) <= set(CATALOGUE)
        assert {"users", "epsilon", "delta", "data_seed", "min_users", "max_epsilon"} <= set(
            d.defaults
        )


def test_one_epsilon_default():
    assert EPSILON_DEFAULT == 1.0  # docs/spec/07-privacy.md P-2
    for name, d in DECLARED.items():
        assert d.defaults["epsilon"] == EPSILON_DEFAULT or "epsilon" in d.reasons, name
    # the families whose own default was 0.9 (seed-004 catalogue) or 0.5 (hp-sdp) take 1.0 now
    for name in ("hist_kr", "cnt_2m", "rsum_rr", "put", "distinct", "hist_lwy", "range"):
        extra = {"domain": 16, "bound": "vr"} if name == "range" else {}
        w = get_workload(name, {"users": 200_000, **extra})
        assert w.protocol.privacy()["eps_central"] == 1.0, name
    assert get_workload("hp-sdp", {"users": 20_000}).protocol.privacy()["eps_central_target"] == 1.0
    with pytest.raises(ValueError, match="differs from the project's 1.0: give the reason"):
        declare(epsilon=0.9)
    assert declare(epsilon=0.9, why={"epsilon": "the paper's runs"}).defaults["epsilon"] == 0.9


def test_read_gives_typed_values_with_the_declared_defaults():
    d = DECLARED["prhr"]
    p = d.read({"users": 5000.0, "rho": "exact", "seed": 7, "fakes": 0})
    assert isinstance(p, Values)
    assert p.users == 5000 and isinstance(p.users, int)
    assert p.domain == 64 and p.epsilon == 1.0 and p.delta == 1e-6 and p.data_seed == 0
    assert p.rho == "exact" and p.tau is None and not p.given("tau") and p.given("rho")
    assert d.read({"rho": 3}).rho == 3
    assert DECLARED["gfim"].read({"shuffle": "false"}).shuffle is False
    with pytest.raises(AttributeError, match="prhr does not declare parameter 'ell'"):
        _ = p.ell
    with pytest.raises(AttributeError, match="read-only"):
        p.users = 3


def test_a_parameter_of_another_protocol_is_refused_naming_the_workload():
    with pytest.raises(ParamError, match=r"grr: unknown parameter 'ell'; grr takes bound, "):
        get_workload("grr", {"users": 1000, "ell": 3})
    with pytest.raises(ParamError, match="hist_kr does not run on your own data"):
        get_workload("hist_kr", {"schema": "x"})
    with pytest.raises(ParamError, match=r"prhr: --param rho=many: rho must be an integer >= 1"):
        get_workload("prhr", {"rho": "many"})
    # the launcher's check: runtime keys pass, the workload's own names are listed
    with pytest.raises(ParamError, match=r"did you mean epsilon.*; grr takes .*zipf"):
        check_params("grr", {"epsilonn": 1.0})


def test_pinned_defaults_come_from_the_declaration():
    # every run records its target epsilon (a later default cannot change what an old run meant)
    assert pinned_defaults("gfim") == {"epsilon": 1.0, "shuffle": True}
    assert pinned_defaults("ldpminer") == {"epsilon": 1.0, "shuffle": True}
    assert pinned_defaults("hist_kr") == {"epsilon": 1.0} and pinned_defaults("txpub") == {}


def test_a_workload_registered_in_a_test_still_runs():
    # the registry keeps plain callables of the run's parameters (tests may add their own)
    assert all(callable(WORKLOADS[n]) for n in DECLARED)


def test_the_privacy_record_keeps_the_wire_keys():
    grr = get_workload("grr", {"users": 2000})
    wire = grr.protocol.privacy()
    assert set(wire) == {
        "eps_central",
        "eps_central_lower",
        "eps_central_target",
        "target_missed",
        "target_note",
        "delta",
        "eps_local",
        "n_accounted",
        "bound",
        "mechanism",
        "note",
    }  # fmt: skip (docs/spec/07-privacy.md P-3, grr)
    rec = PrivacyStatement.from_wire(wire)
    assert rec.certified_epsilon == wire["eps_central"]
    assert rec.target_epsilon == wire["eps_central_target"] == 1.0
    assert rec.wire() == wire
    # seed 000 publishes the target as eps_c and the local epsilon as eps_l
    psrr = get_workload("psrr-ss", {"users": 20_000}).protocol.privacy()
    assert "eps_c" in psrr and "eps_l" in psrr and "eps_central" not in psrr
    rec = PrivacyStatement.from_wire(psrr, SEED000)
    assert rec.target_epsilon == psrr["eps_c"] and rec.certified_epsilon is UNSTATED
    assert rec.wire() == psrr
    # a protocol field may not shadow a record field under its wire key
    with pytest.raises(ValueError, match="have a record field"):
        PrivacyStatement(delta=1e-6, extra={"eps_central": 1.0})
    # null is published, unstated is not
    assert PrivacyStatement(local_epsilon=None).wire() == {"eps_local": None}


def test_a_record_made_before_epsilon_was_pinned_reads_the_default_of_its_time():
    """Runs recorded before issue 39 carry no epsilon when none was given; they ran the old
    per-family default (0.9 in the seed-004 catalogue, 0.5 for hp-sdp), so the parties and the
    verifier rebuild them with it; every newer record carries its epsilon (pinned)."""
    from protocols.workloads import recorded_workload

    old = recorded_workload("hist_kr", {"users": 200_000}).protocol.privacy()
    new = get_workload("hist_kr", {"users": 200_000}).protocol.privacy()
    assert old["eps_central"] == 0.9 and new["eps_central"] == 1.0
    pinned = recorded_workload("hist_kr", {"users": 200_000, "epsilon": 1.0}).protocol
    assert pinned.privacy()["eps_central"] == 1.0
    assert DECLARED["hp-sdp"].recorded({})["epsilon"] == 0.5
    assert DECLARED["grr"].recorded({}) == {}  # grr's default was 1.0 already
    with pytest.raises(ValueError, match="must be pinned"):
        declare(legacy={"domain": 3})
