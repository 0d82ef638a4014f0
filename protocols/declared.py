"""A workload's declared parameters: which catalogue entries it takes, with its defaults.

Each workload declares its parameters where it is registered
(``@register("prhr", params=declare(domain=64, rho="paper", ...))``): the names are entries of
:data:`protocols.params.CATALOGUE` (type, range and meaning live there, once), the values are
this workload's defaults (``None``: absent unless given; the code then derives it, e.g. delta
from n). The parameters every protocol takes (:data:`COMMON_DEFAULTS`, read by the parties and
the launcher too) are added to every declaration, with the one project default for epsilon.

The registry reads a run's parameters through :meth:`Declared.read` before the factory sees
them: a key of another protocol is refused naming the workload and the names it takes, a bad
value with the parameter's range and meaning, and the factory gets typed :class:`Values` with
the declared defaults filled in. Keys outside the catalogue (the shufflers' runtime options,
the client seed) pass through untouched: the parties read them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from protocols.params import CATALOGUE, OWN_DATA, Param, ParamError, unknown_message

# The project's default central target (docs/spec/07-privacy.md P-2): every workload takes it
# unless its declaration gives another value with a reason.
EPSILON_DEFAULT = 1.0

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
    names the model that ran; ``reasons`` says why a default departs from the project's."""

    defaults: Mapping[str, Any]
    pinned: tuple[str, ...] = ()
    reasons: Mapping[str, str] = field(default_factory=dict)
    workload: str = ""

    def named(self, workload: str) -> Declared:
        """This declaration registered as ``workload`` (used in its error messages)."""
        return replace(self, workload=workload)

    @property
    def params(self) -> dict[str, Param]:
        return {n: CATALOGUE[n] for n in self.defaults}

    def pinned_defaults(self) -> dict[str, Any]:
        return {k: self.defaults[k] for k in self.pinned}

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


def _show(value: Any) -> str:
    return (
        "true"
        if value is True
        else "false"
        if value is False
        else f"{value:g}"
        if isinstance(value, float)
        else str(value)
    )


def declare(
    *, pin: Iterable[str] = (), why: Mapping[str, str] | None = None, **defaults: Any
) -> Declared:
    """The declaration of a workload taking the common parameters and ``defaults`` (catalogue
    name -> default, None: derived or absent). ``pin`` names defaults recorded into every run;
    ``why`` gives the reason of each default that differs from the project's (epsilon)."""
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
        if default is not None and not (
            isinstance(default, str) and default in CATALOGUE[name].also
        ):
            CATALOGUE[name].check(default, "declare")
    return Declared(merged, tuple(pin), why)
