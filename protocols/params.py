"""Protocol parameters: the catalogue (name, type, range, meaning, each written once) and a
workload's declaration of the ones it takes, with its defaults.

Each workload declares its parameters where it is registered
(``@register("prhr", params=declare(domain=64, rho="paper", ...))``): the names are entries of
:data:`CATALOGUE`, the values this workload's defaults (``None``: absent unless given; the code
then derives it, e.g. delta from n). The parameters every protocol takes
(:data:`COMMON_DEFAULTS`, read by the parties and the launcher too) join every declaration,
with the one project default for epsilon (:data:`EPSILON_DEFAULT`).

The registry reads a run's parameters through :meth:`Declared.read` before the factory sees
them: a key of another protocol is refused naming the workload and the names it takes, a bad
value with the parameter's range and meaning, and the factory gets typed :class:`Values` with
the declared defaults filled in. Keys outside the catalogue (the shufflers' runtime options,
the client seed) pass through untouched: the parties read them. ``sdp run NAME --param
KEY=VALUE`` is checked against the same declaration (:meth:`Declared.check`, "did you mean")
before anything is built, and ``sdp run NAME --help`` lists it.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any


class ParamError(ValueError):
    """A parameter that is unknown to the protocol or has a bad value (one line)."""


@dataclass(frozen=True)
class Param:
    """One parameter: ``kind`` is int, float, bool, str or choice (``choices`` then lists the
    values); ``low``/``high`` bound numbers (inclusive unless ``open_low``); ``also`` lists
    choice words accepted beside a number (e.g. ``levels`` = survey | optimal | an integer)."""

    name: str
    kind: str
    meaning: str
    low: float | None = None
    high: float | None = None
    open_low: bool = False
    choices: tuple[str, ...] = ()
    also: tuple[str, ...] = ()

    def describe_range(self) -> str:
        if self.kind == "choice":
            return "one of " + " | ".join(self.choices)
        if self.kind == "bool":
            return "true | false"
        if self.kind == "str":
            return "text"
        what = "an integer" if self.kind == "int" else "a number"
        parts = []
        if self.low is not None:
            parts.append(f"{'>' if self.open_low else '>='} {self.low:g}")
        if self.high is not None:
            parts.append(f"<= {self.high:g}")
        text = what + (" " + " and ".join(parts) if parts else "")
        if self.also:
            text += " or " + " | ".join(self.also)
        return text

    def check(self, value: Any, protocol: str, option: bool = False) -> None:
        """Raise ParamError naming the parameter, its range and meaning when ``value`` is bad
        (``option``: it was given as ``--name VALUE`` rather than ``--param name=VALUE``)."""
        given = (
            f"--{self.name.replace('_', '-')} {_show(value)}"
            if option
            else f"--param {self.name}={_show(value)}"
        )

        def bad() -> ParamError:
            return ParamError(
                f"{protocol}: {given}: {self.name} must be {self.describe_range()} ({self.meaning})"
            )

        if self.kind == "str":
            return
        if self.kind == "choice":
            if str(value) not in self.choices:
                raise bad()
            return
        if self.kind == "bool":
            if isinstance(value, bool) or value in (0, 1):
                return
            if str(value).lower() in ("true", "false", "yes", "no", "on", "off"):
                return
            raise bad()
        if isinstance(value, str) and value in self.also:
            return
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise bad()
        if not math.isfinite(value):
            raise bad()
        if self.kind == "int" and float(value) != int(value):
            raise bad()
        if self.low is not None and (value <= self.low if self.open_low else value < self.low):
            raise bad()
        if self.high is not None and value > self.high:
            raise bad()


def _show(value: Any) -> str:
    return "true" if value is True else "false" if value is False else str(value)


def _p(name: str, kind: str, meaning: str, **kw: Any) -> Param:
    return Param(name, kind, meaning, **kw)


# The largest epsilon the accountant computes with (its privacy-loss distributions overflow
# their atoms above about 35 for GRR); no useful guarantee lies anywhere near it.
EPS_MAX = 30.0

# Names people try for a parameter that has another name (a hint beside "did you mean").
ALIASES = {
    "model": "shuffle",
    "local": "shuffle",
    "ldp": "shuffle",
    "eps": "epsilon",
    "n": "users",
    "eps_c": "epsilon",
    "eps_l": "local_epsilon",
    "topk": "k",
}

BOUNDS = (
    "balle",
    "fmt21",
    "vr",
    "paper",
    "tight",
    "exact",
    "decomposition",
    "theorem3",
    "theorem4",
)

# Every parameter any protocol reads, once; the protocols below pick theirs by name.
CATALOGUE: dict[str, Param] = {
    p.name: p
    for p in (
        _p("users", "int", "number of users (records) taking part", low=1),
        _p(
            "epsilon",
            "float",
            "central privacy target eps_c; the accountant's numerics support up to "
            f"{EPS_MAX:g}, far beyond any meaningful guarantee",
            low=0,
            open_low=True,
            high=EPS_MAX,
        ),
        _p(
            "local_epsilon",
            "float",
            "override the local epsilon (the stated central guarantee is then its own)",
            low=0,
            open_low=True,
            high=EPS_MAX,
        ),
        _p("delta", "float", "central delta (default min(1e-6, 0.01/n))", low=0, high=0.5),
        _p(
            "bound",
            "choice",
            "amplification bound that calibrates the local epsilon",
            choices=BOUNDS,
        ),
        _p(
            "accounting",
            "choice",
            "how the guarantee is accounted: the accountant (tight/exact) "
            "or the paper's closed form",
            choices=("tight", "paper", "exact"),
        ),
        _p("tight_bound", "choice", "bound used by tight accounting", choices=("vr", "fmt21")),
        _p(
            "policy",
            "choice",
            "what to do when a group cannot be calibrated",
            choices=("strict", "paper_lenient", "fallback"),
        ),
        _p("estimator", "choice", "frequency estimator", choices=("paper", "observed")),
        _p("dataset", "str", "dataset name (see the protocol's docs; own data: --data/--schema)"),
        _p("data_dir", "str", "folder of the raw dataset files"),
        _p("data_seed", "int", "seed of generated or subsampled data (public)", low=0),
        _p("domain", "int", "domain size d (single-attribute protocols)", low=2),
        _p("min_users", "int", "fewest users a release may have (calibrated at this count)", low=1),
        _p(
            "max_epsilon",
            "float",
            "refuse to publish above this central epsilon",
            low=0,
            open_low=True,
        ),
        _p("k", "int", "top-k size (gfim, ldpminer) or the marginal width (calm-*)", low=1),
        _p("k_max", "int", "candidates kept after round 1 (gfim, ldpminer; default 2k)", low=1),
        _p(
            "ell",
            "int",
            "padding length: items each user pads or samples its set to (public; "
            "give it for data without a public one, e.g. --param ell=20)",
            low=1,
        ),
        _p(
            "shuffle",
            "bool",
            "true (default): the shuffle model, epsilon is the central target; "
            "false: pure local DP, epsilon is the local budget",
        ),
        _p("method", "str", "variant of the protocol (see its docs)"),
        _p(
            "combination",
            "choice",
            "how GFIM combines its two rounds",
            choices=("thesis", "ivw", "phase2"),
        ),
        _p("g", "int", "hash range of OLH (hp-sdp; default the paper's optimum)", low=2),
        _p("zipf", "float", "exponent of the synthetic Zipf data", low=0),
        _p("q", "float", "probability of a 1 in the synthetic bits", low=0, high=1),
        _p(
            "gamma",
            "float",
            "fraction of honest users the guarantee assumes",
            low=0,
            open_low=True,
            high=1,
        ),
        _p("delta_split", "float", "Split-Mix statistical delta", low=0, open_low=True, high=0.5),
        _p("precision", "int", "fixed-point precision of the values", low=1),
        _p(
            "precisions",
            "choice",
            "precisions of the multi-message sum",
            choices=("optimized", "generic"),
        ),
        _p("levels", "int", "levels of the k-ary sum", low=1, also=("survey", "optimal")),
        _p("m", "int", "messages per user (rsum_rm)", low=2, high=3),
        _p("sigma", "float", "Split-Mix noise scale override", low=0, open_low=True),
        _p(
            "variant",
            "choice",
            "splitmix or the single-message baseline",
            choices=("splitmix", "single"),
        ),
        _p("fake_rate", "float", "MURS: fraction of fake messages each user adds", low=0, high=1),
        _p(
            "support",
            "float",
            "distinct: fraction of the domain the column holds",
            low=0,
            open_low=True,
            high=1,
        ),
        _p(
            "word_bits",
            "int",
            "distinct: bits of the domain per XOR-shared message",
            low=1,
            high=30,
        ),
        _p(
            "hash_exponent",
            "float",
            "hist_lwy, fe1: hash range n/ln(n)^c, this c",
            low=0,
            open_low=True,
        ),
        _p(
            "blanket",
            "choice",
            "fe1: blanket mass from the authors' binomial condition or our exact accountant",
            choices=("authors", "exact"),
        ),
        _p("phi", "float", "hhd: report items of frequency >= phi n", low=0, open_low=True, high=1),
        _p("items", "int", "fe1, hhd: distinct items of the synthetic Zipf data", low=1),
        _p("rho", "int", "PRHR: uniform noise tuples per user", low=1, also=("paper", "exact")),
        _p("tau", "int", "PRHR: Hadamard columns per tuple (default ceil(log2 users))", low=1),
        _p(
            "noise_rate",
            "float",
            "PUCM: probability of each noise message (bucket) per user",
            low=0,
            open_low=True,
            high=1,
            also=("paper", "exact"),
        ),
        _p("buckets", "int", "PUCM: buckets per hash row (default 2 users)", low=1),
        _p("hash_seed", "int", "PUCM: seed of the public hash table", low=0),
        _p("branching", "int", "branching factor of the range tree", low=2),
        _p("oracle", "choice", "frequency oracle of each tree level", choices=("krr", "slh")),
        _p("queries", "int", "number of random ranges answered", low=1),
        _p("bins", "int", "bins of the uniformity test (default the domain)", low=2),
        _p("size", "float", "significance level of the test", low=0, open_low=True, high=1),
        _p(
            "alpha",
            "float",
            "TV distance of the data from uniform (0: uniform data)",
            low=0,
            high=1,
        ),
        _p("max_cells", "int", "Calm: most cells a marginal may have", low=1),
        _p("w_max", "int", "Calm: widest marginal collected", low=1),
        _p(
            "r0",
            "float",
            "Calm: the noise-vs-coverage constant of the (w, m) choice",
            low=0,
            open_low=True,
        ),
        _p(
            "synthetic",
            "choice",
            "synthetic data written after publication",
            choices=("auto", "joint", "sequential", "none"),
        ),
        _p("synthetic_n", "int", "synthetic records written (default n)", low=1),
        _p("synthetic_seed", "int", "seed of the synthetic records", low=0),
        _p("schema", "str", "the public schema's text (set by --schema)"),
        _p("data", "str", "own data file (set by --data)"),
    )
}

# The protocols that run on their owners' own data (``sdp run NAME --data FILE --schema S``),
# with the kind of schema each takes (docs/data.md; tests/test_data_docs.py checks the docs).
OWN_DATA: dict[str, str] = {
    **{name: "categorical" for name in ("psrr-ss", "srr-ms", "arr-ss", "sue-ms", "oue-ldp")},
    "gfim": "setvalued",
    "ldpminer": "setvalued",
    "splitmix-sum": "numeric",
}


def unknown_message(
    protocol: str, key: str, known: Iterable[str], takes: Iterable[str] = ()
) -> str:
    """One line refusing ``key``: the closest of ``known`` ("did you mean"), then the names
    ``protocol`` itself takes (``takes``) and where the rest are listed."""
    known = sorted(known)
    close = difflib.get_close_matches(key, known, n=3, cutoff=0.6)
    if ALIASES.get(key) in known:
        close = [ALIASES[key]] + [c for c in close if c != ALIASES[key]][:1]
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    own = f"; {protocol} takes {', '.join(sorted(takes))}" if takes else ""
    return (
        f"{protocol}: unknown parameter {key!r}{hint}{own} (sdp run {protocol} --help lists "
        "the parameters it takes)"
    )


# ---- a workload's declaration: the catalogue names it takes, with its defaults ----
# The project's default central target (docs/spec/07-privacy.md P-2): every workload takes it
# unless its declaration gives another value with a reason.
EPSILON_DEFAULT = 1.0

# The epsilon of a run recorded before epsilon was pinned into every run's record (issue 39)
# that gave none: the seed-004 catalogue's workloads defaulted to 0.9, hp-sdp to 0.5. Declared
# as ``legacy`` by those workloads; only :meth:`Declared.recorded` reads it.
SURVEY_LEGACY = {"epsilon": 0.9}
HP_SDP_LEGACY = {"epsilon": 0.5}

# Parameters every protocol takes (read by the parties or the launcher as well as the workload),
# with their defaults: None means "derived": users from the workload or its dataset, delta =
# min(1e-6, 0.01/n), min_users = n, max_epsilon = the target.
COMMON_DEFAULTS: dict[str, Any] = {
    "users": None,
    "epsilon": EPSILON_DEFAULT,
    "delta": None,
    "data_seed": 0,
    "min_users": None,
    "max_epsilon": None,
}

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def _number_text(p: Param, value: Any) -> Any:
    """A number written as text (a cluster file's or a caller's string: ``"1.0"``) as the
    number, so that it is checked and converted as one; other values unchanged."""
    if p.kind not in ("int", "float") or not isinstance(value, str) or value in p.also:
        return value
    try:
        number = float(value)
    except ValueError:
        return value
    return int(number) if p.kind == "int" and number.is_integer() else number


def convert(p: Param, value: Any) -> Any:
    """``value`` (already checked by ``p.check``) as ``p``'s type: int, float, bool or str; a
    word of ``p.also`` stays a word; None stays None."""
    if value is None:
        return None
    if p.kind in ("str", "choice"):
        return str(value)
    if p.kind == "bool":
        if isinstance(value, bool):
            return value
        text = str(value).lower()
        if text in _TRUE or text in _FALSE:
            return text in _TRUE
        return bool(value)
    if isinstance(value, str):
        if value in p.also:
            return value
        value = float(value)
    return int(value) if p.kind == "int" else float(value)


class Values:
    """A workload's parameters after :meth:`Declared.read`: ``p.NAME`` is the given value
    converted to the declared type, else the declared default; ``p.raw`` is the run's whole
    parameter mapping (for the readers of own data and the privacy helpers)."""

    def __init__(self, workload: str, values: Mapping[str, Any], raw: Mapping[str, Any]) -> None:
        object.__setattr__(self, "_workload", workload)
        object.__setattr__(self, "_values", dict(values))
        object.__setattr__(self, "raw", raw)

    def __getattr__(self, key: str) -> Any:
        values = object.__getattribute__(self, "_values")
        if key in values:
            return values[key]
        workload = object.__getattribute__(self, "_workload")
        raise AttributeError(
            f"{workload} does not declare parameter {key!r} (declared: {', '.join(sorted(values))})"
        )

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError("workload parameters are read-only")

    def given(self, key: str) -> bool:
        """Whether the run gave ``key`` (not None), as opposed to its default applying."""
        self.__getattr__(key)  # refuse undeclared names
        return self.raw.get(key) is not None

    def as_dict(self) -> dict[str, Any]:
        return dict(object.__getattribute__(self, "_values"))


@dataclass(frozen=True)
class Declared:
    """The parameters of one workload: ``defaults`` maps each catalogue name it takes to its
    default; ``pinned`` names the defaults written into a run's parameters so that its record
    names the model that ran; ``reasons`` says why a default departs from the project's;
    ``legacy`` holds the defaults of runs recorded before a parameter was pinned (a record
    without it ran the default of its time: :meth:`recorded`)."""

    defaults: Mapping[str, Any]
    pinned: tuple[str, ...] = ()
    reasons: Mapping[str, str] = field(default_factory=dict)
    workload: str = ""
    legacy: Mapping[str, Any] = field(default_factory=dict)

    def named(self, workload: str) -> Declared:
        """This declaration registered as ``workload`` (used in its error messages)."""
        return replace(self, workload=workload)

    @property
    def params(self) -> dict[str, Param]:
        return {n: CATALOGUE[n] for n in self.defaults}

    def pinned_defaults(self) -> dict[str, Any]:
        return {k: self.defaults[k] for k in self.pinned}

    def recorded(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """The parameters a run's record stands for: every run records its pinned parameters
        (``sdp run``, ``sdp cluster init``), so a record without one was made before it was
        pinned and ran that version's default (``legacy``; e.g. epsilon 0.9 in the seed-004
        catalogue before issue 39 made 1.0 the one default)."""
        missing = {k: v for k, v in self.legacy.items() if params.get(k) is None}
        return {**params, **missing}

    def check(
        self,
        params: Mapping[str, Any],
        runtime: Mapping[str, Param] | None = None,
        options: Iterable[str] = (),
    ) -> None:
        """Refuse unknown keys (the closest names, the names this workload takes) and bad
        values. ``runtime`` holds the parameters the parties read (any protocol takes them);
        ``options`` the keys that have a command-line option of their own."""
        own = self.params
        known = {**own, **(runtime or {})}
        options = set(options)
        for key, value in params.items():
            if key not in known:
                raise self._unknown(key, known)
            if value is not None:
                known[key].check(value, self.workload, option=key in options)

    def read(self, params: Mapping[str, Any]) -> Values:
        """The typed values of a run's ``params``: a catalogue key this workload does not take
        is refused, a bad value too; keys outside the catalogue (runtime options) pass."""
        for key in params:
            if key in CATALOGUE and key not in self.defaults:
                raise self._unknown(key, self.defaults)
        values = {}
        for key, default in self.defaults.items():
            p, given = CATALOGUE[key], params.get(key)
            if given is None:
                values[key] = convert(p, default)
                continue
            given = _number_text(p, given)
            p.check(given, self.workload)
            values[key] = convert(p, given)
        return Values(self.workload, values, params)

    def help(self, runtime: Mapping[str, Param] | None = None) -> str:
        """The parameters as text lines for ``sdp run NAME --help`` (with their defaults)."""
        lines = [
            f"parameters of {self.workload} (--param KEY=VALUE, or the option of the same name):"
        ]
        for p in self.params.values():
            default = self.defaults[p.name]
            shown = "" if default is None else f" [default {_show(default)}]"
            lines.append(f"  {p.name:<15} {p.describe_range()}: {p.meaning}{shown}")
        if runtime:
            lines.append("parameters of the shufflers and the run (any protocol):")
            for p in runtime.values():
                lines.append(f"  {p.name:<15} {p.describe_range()}: {p.meaning}")
        return "\n".join(lines)

    def _unknown(self, key: str, known: Iterable[str]) -> ParamError:
        if key in ("schema", "data"):
            return ParamError(
                f"{self.workload} does not run on your own data (--data/--schema); the protocols "
                f"that do: {', '.join(sorted(OWN_DATA))} (docs/data.md; sdp protocols)"
            )
        return ParamError(unknown_message(self.workload, key, known, takes=self.defaults))


def declare(
    *,
    pin: Iterable[str] = (),
    why: Mapping[str, str] | None = None,
    legacy: Mapping[str, Any] | None = None,
    **defaults: Any,
) -> Declared:
    """The declaration of a workload taking the common parameters and ``defaults`` (catalogue
    name -> default, None: derived or absent). ``pin`` names defaults recorded into every run
    (always ``epsilon``: a run's record names its target even if a later version changes the
    default); ``why`` gives the reason of each default that differs from the project's;
    ``legacy`` the defaults that runs recorded before pinning ran (:meth:`Declared.recorded`)."""
    unknown = sorted(set(defaults) - set(CATALOGUE))
    if unknown:
        raise ValueError(f"declare: {unknown} are not in protocols.params.CATALOGUE")
    merged = {**COMMON_DEFAULTS, **defaults}
    why = dict(why or {})
    if merged["epsilon"] != EPSILON_DEFAULT and "epsilon" not in why:
        raise ValueError(
            f"declare: epsilon default {merged['epsilon']} differs from the project's "
            f"{EPSILON_DEFAULT}: give the reason (why={{'epsilon': ...}})"
        )
    for name in pin:
        if merged.get(name) is None:
            raise ValueError(f"declare: pinned parameter {name!r} has no default")
    for name, default in merged.items():
        if default is not None:
            CATALOGUE[name].check(default, "declare")
    pinned = tuple(dict.fromkeys(("epsilon", *pin)))
    if set(legacy or {}) - set(pinned):
        raise ValueError(f"declare: legacy defaults {sorted(legacy or {})} must be pinned")
    return Declared(merged, pinned, why, legacy=dict(legacy or {}))
