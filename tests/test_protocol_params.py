"""Every protocol declares its parameters (issue 30 items 1, 2, 4).

The declarations (``register(NAME, params=declare(...))`` over ``protocols/params.py``'s
catalogue) are checked against the code: every workload is built
with a dictionary that records the keys it reads, and each key read must be declared; the same
builds state their privacy through the one record (``protocols/privacy/record.py``). ``sdp run``
refuses unknown keys with "did you mean", bad values with the parameter's name and range, an
epsilon outside the accountant's range with that range, and ``sdp run NAME --help`` lists them.
"""

from __future__ import annotations

import functools
import subprocess
import sys

import pytest

from parties.runtime.run_options import RUNTIME_PARAMS
from protocols.params import CATALOGUE, EPS_MAX, ParamError
from protocols.privacy.record import Published
from protocols.workloads import DECLARED, WORKLOADS, Workload, check_params, get_workload

get_workload("grr", {"users": 100})  # import every registering module


class Recording(dict):
    """A parameter dictionary that records every key the workload factory reads."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.read: set[str] = set()

    def get(self, k, d=None):
        self.read.add(k)
        return super().get(k, d)

    def __getitem__(self, k):
        self.read.add(k)
        return super().__getitem__(k)

    def __contains__(self, k):
        self.read.add(k)
        return super().__contains__(k)

    def setdefault(self, k, d=None):
        self.read.add(k)
        return super().setdefault(k, d)

    def pop(self, k, *d):
        self.read.add(k)
        return super().pop(k, *d)


# Enough users for every catalogue protocol's theorem at its defaults.
BUILD = {name: {"users": 200_000} for name in WORKLOADS}
BUILD.update({n: {"users": 20_000} for n in ("psrr-ss", "srr-ms", "arr-ss", "sue-ms", "oue-ldp")})
BUILD.update({n: {"users": 3_000} for n in ("gfim", "ldpminer", "calm-psrr-ss", "calm-srr-ms")})
BUILD["calm-arr-ss"] = {"users": 3_000}
BUILD["range"] = {"users": 200_000, "domain": 16, "bound": "vr"}


# The statement classes a workload's defaults do not reach (methods, variants, LDP modes).
VARIANTS = [("hp-sdp", {"users": 20_000, "method": m}) for m in ("hp-sm", "sh", "aue", "murs")]
VARIANTS += [("hp-sdp", {"users": 20_000, "method": m}) for m in ("pure-dump", "mix-dump")]
VARIANTS += [("splitmix-sum", {"users": 20_000, "variant": "single"})]
VARIANTS += [("gfim", {"users": 3_000, "shuffle": False}), ("ldpminer", {"shuffle": False})]
VARIANTS += [("gfim", {"users": 3_000, "shuffle": False, "method": "one-phase"})]
VARIANTS += [("range", {"users": 200_000, "domain": 16, "oracle": "slh"})]


@functools.cache
def _built(name: str) -> tuple[Workload, frozenset[str]]:
    """Workload ``name`` at :data:`BUILD`'s parameters and the keys its factory read."""
    params = Recording(BUILD[name])
    return WORKLOADS[name](params), frozenset(params.read)


def test_every_runnable_protocol_is_declared():
    assert set(WORKLOADS) <= set(DECLARED), set(WORKLOADS) - set(DECLARED)
    for d in DECLARED.values():
        assert set(d.defaults) <= set(CATALOGUE)


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_every_key_a_workload_reads_is_declared(name):
    undeclared = _built(name)[1] - set(DECLARED[name].defaults) - set(RUNTIME_PARAMS)
    assert not undeclared, f"{name} reads undeclared parameters {sorted(undeclared)}"


# fe1 and hhd run their exact blanket accountant in privacy() (tens of seconds each at BUILD's
# users): slow here; test_fe1's workload test checks fe1's statement in the fast suite.
STATEMENT_SLOW = {"fe1", "hhd"}


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.slow) if n in STATEMENT_SLOW else n
        for n in sorted(WORKLOADS)
    ],
)
def test_every_workload_states_its_privacy_through_the_record(name):
    """``privacy()`` is a :class:`PrivacyStatement`'s wire form (one name per field, the wire
    keys of docs/spec/07-privacy.md), not a mapping a protocol wrote itself."""
    statements = [_built(name)[0].protocol.privacy()]
    statements += [WORKLOADS[n](dict(p)).protocol.privacy() for n, p in VARIANTS if n == name]
    for st in statements:
        assert isinstance(st, Published), f"{name}: privacy() is not built by PrivacyStatement"
        assert {"eps_central", "eps_c", "eps_local"} & set(st), f"{name} states no epsilon"


def test_unknown_key_is_refused_with_did_you_mean():
    with pytest.raises(ParamError, match="unknown parameter 'model'; did you mean shuffle"):
        check_params("gfim", {"model": "shuffle"}, RUNTIME_PARAMS)
    with pytest.raises(ParamError, match="did you mean epsilon"):
        check_params("grr", {"epsilonn": 1.0}, RUNTIME_PARAMS)
    check_params("gfim", {"shuffle": "false", "ell": 20, "fakes": 0}, RUNTIME_PARAMS)


@pytest.mark.parametrize(
    "name,key,value,words",
    [
        ("gfim", "ell", "abc", "ell must be an integer >= 1"),
        ("gfim", "ell", 2.5, "ell must be an integer"),
        ("gfim", "shuffle", "maybe", "shuffle must be true | false"),
        ("psrr-ss", "accounting", "loose", "accounting must be one of tight | paper | exact"),
        ("grr", "delta", 0.9, "delta must be a number >= 0 and <= 0.5"),
        ("grr", "epsilon", 1e9, f"epsilon must be a number > 0 and <= {EPS_MAX:g}"),
        ("rsum_kr", "levels", "many", "levels must be an integer >= 1 or survey | optimal"),
    ],
)
def test_bad_values_name_the_parameter_and_its_range(name, key, value, words):
    with pytest.raises(ParamError, match=words.replace("|", r"\|")):
        check_params(name, {key: value}, RUNTIME_PARAMS)


def test_word_values_of_a_numeric_parameter_pass():
    check_params("rsum_kr", {"levels": "survey"}, RUNTIME_PARAMS)
    check_params("rsum_kr", {"levels": 3}, RUNTIME_PARAMS)


def _sdp(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "parties.cli", *args], capture_output=True, text=True, timeout=120
    )


def test_sdp_run_refuses_in_one_line(tmp_path):
    out = tmp_path / "r"
    for args, words in [
        (["gfim", "--param", "model=shuffle"], "did you mean shuffle"),
        (["gfim", "--param", "ell=abc"], "ell must be an integer >= 1"),
        (["grr", "--epsilon", "1e9"], "--epsilon 1000000000.0: epsilon must be a number > 0"),
        (["hist_kr", "--schema", "x.toml"], None),
    ]:
        proc = _sdp("run", *args, "--out", str(out), "--quiet")
        assert proc.returncode == 2, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert "Traceback" not in proc.stderr
        if words:
            assert words in proc.stderr
        assert not out.exists()


def test_sdp_run_protocol_help_lists_its_parameters():
    proc = _sdp("run", "gfim", "--help")
    assert proc.returncode == 0
    for key in ("shuffle", "ell", "k_max", "combination", "local_epsilon"):
        assert f"\n  {key} " in proc.stdout
    assert "the shuffle model" in proc.stdout and "pure local DP" in proc.stdout


def test_gfim_defaults_to_the_shuffle_model_and_records_it(tmp_path):
    from parties.launcher import build_parser
    from parties.runtime.run_options import resolve_job

    args = build_parser().parse_args(["gfim", "--users", "3000", "--out", str(tmp_path / "r")])
    _, _, params, _ = resolve_job(args)
    assert params["shuffle"] is True  # pinned into the run's parameters
    assert get_workload("gfim", {"users": 3000}).protocol.privacy()["model"] == "shuffle"
    assert get_workload("gfim", {"users": 3000, "shuffle": False}).protocol.name == "gfim"
