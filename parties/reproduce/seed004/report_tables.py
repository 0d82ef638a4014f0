"""The Markdown of the seed-004 report (tables of every result; verdicts from ``report``)."""

from __future__ import annotations

from typing import Any

from parties.reproduce.seed004 import newer
from parties.reproduce.seed004.common import err_of as _err
from parties.reproduce.seed004.common import fmt as _fmt
from parties.reproduce.seed004.methods import METHODS, SURVEY_METHODS
from parties.reproduce.seed004.report_plots import FIGS

PROBLEM_TITLE = {"count": "Counting", "hist": "Histograms", "sum": "Sums"}


def _defaults_table(res: dict[str, Any]) -> list[str]:
    lines = [
        "| problem | method | RMSE | expected RMSE | analyzer s | messages/user | bits/user | "
        "accounted (eps, delta) | status |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, m in METHODS.items():
        r = res["methods"][name]
        acc = f"({_fmt(r.get('eps'))}, {_fmt(r.get('delta'))})" if r.get("eps") else "-"
        lines.append(
            f"| {m.problem} | `{name}` ({m.label}) | {_fmt(r.get('rmse'))} | "
            f"{_fmt(r.get('expected_rmse'))} | {_fmt(r.get('analyzer_seconds'))} | "
            f"{_fmt(r.get('messages_per_user'))} | {_fmt(r.get('bits_per_user'))} | {acc} | "
            f"{r.get('status', '-')[:60]} |"
        )
    return lines


def _ran(res: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(problem, its survey methods that ran) for every problem with at least one."""
    out = []
    for problem, names in SURVEY_METHODS.items():
        ok = {k: res["methods"][k] for k in names if res["methods"][k].get("status") == "ok"}
        if ok:
            out.append((problem, ok))
    return out


def orderings(res: dict[str, Any]) -> list[str]:
    """Who has the lowest error and who communicates most, per problem (survey's methods)."""
    lines = []
    for problem, ok in _ran(res):
        by_err = sorted(ok, key=lambda k: _err(ok[k]))
        by_msg = sorted(ok, key=lambda k: -ok[k]["messages_per_user"])
        by_time = sorted(ok, key=lambda k: ok[k]["analyzer_seconds"])
        lines.append(
            f"- {PROBLEM_TITLE[problem]}: error, lowest first: {', '.join(by_err)}; "
            f"messages per user, most first: {', '.join(by_msg)}; analyzer time, fastest first: "
            f"{', '.join(by_time)}."
        )
    return lines


SURVEY_SAYS = {
    "count": "lowest error Cnt_SGM; Cnt_2M highest error and communication, lowest computation",
    "hist": "lowest error Hist_KR (close to CDP on a small domain); Hist_MM apart in computation "
    "and communication",
    "sum": "lowest error RSum_DSG with the largest computation and communication; RSum_RM near "
    "the lowest error with clearly smaller computation",
}


def comparison(res: dict[str, Any]) -> list[str]:
    """The closing note: the survey's orderings next to ours."""
    lines = ["| problem | the survey | measured here |", "|---|---|---|"]
    for problem, ok in _ran(res):
        low = min(ok, key=lambda k: _err(ok[k]))
        most = max(ok, key=lambda k: ok[k]["messages_per_user"])
        most_bits = max(ok, key=lambda k: ok[k]["bits_per_user"])
        high = max(ok, key=lambda k: _err(ok[k]))
        fast = min(ok, key=lambda k: ok[k]["analyzer_seconds"])
        lines.append(
            f"| {PROBLEM_TITLE[problem]} | {SURVEY_SAYS[problem]} | lowest error `{low}`, highest "
            f"`{high}`; most messages/user `{most}`, most bits/user `{most_bits}`; fastest "
            f"analyzer `{fast}` |"
        )
    return lines


def _sweep_table(res: dict[str, Any], key: str) -> list[str]:
    sw = res["sweeps"][key]
    values = sorted({r["value"] for r in sw["rows"]})
    names = [n for n in METHODS if any(r["method"] == n for r in sw["rows"])]
    head = "| method | " + " | ".join(f"{sw['param']}={v}" for v in values) + " |"
    lines = [head, "|---|" + "---|" * len(values)]
    for n in names:
        cells = []
        for v in values:
            r = next((r for r in sw["rows"] if r["method"] == n and r["value"] == v), None)
            if r is None or r.get("status") != "ok":
                cells.append("n/a")
            else:
                cells.append(
                    f"{_fmt(r['rmse'])} / {_fmt(r['analyzer_seconds'], 2)} s / "
                    f"{_fmt(r['messages_per_user'])} msg"
                )
        lines.append(f"| `{n}` | " + " | ".join(cells) + " |")
    bad = [r for r in sw["rows"] if r.get("status") not in (None, "ok")]
    if bad:
        lines.append("")
        lines.append(
            "Not run: "
            + "; ".join(
                f"`{r['method']}` at {sw['param']}={r['value']} ({r['status'][:90]})" for r in bad
            )
        )
    return lines


def _accountant(res: dict[str, Any]) -> list[str]:
    acc = res["accountant"]
    t1 = acc["table1_theorem1_forward"]
    eps_l = list(next(iter(t1.values())))
    lines = [
        f"Table 1 (Theorem 1, eps_c for eps_l; delta = {acc['delta']:g}):",
        "",
        "| n | " + " | ".join(f"eps_l={e}" for e in eps_l) + " |",
        "|---|" + "---|" * len(eps_l),
    ]
    for n, row in t1.items():
        lines.append(f"| {int(n):.0e} | " + " | ".join(_fmt(v) for v in row.values()) + " |")
    for name, tab in acc["tables2_4_inverse"].items():
        eps_c = list(next(iter(tab.values())))
        lines += [
            "",
            f'Largest eps_l by {name} ("-" = the theorem\'s conditions fail):',
            "",
            "| n | " + " | ".join(f"eps_c={e}" for e in eps_c) + " |",
            "|---|" + "---|" * len(eps_c),
        ]
        for n, row in tab.items():
            lines.append(f"| {int(n):.0e} | " + " | ".join(_fmt(v) for v in row.values()) + " |")
    lines += ["", "Theorem 4's eps_l across k:", ""]
    for key, row in acc["theorem4_across_k"].items():
        lines.append(f"- {key}: " + ", ".join(f"k={k}: {_fmt(v)}" for k, v in row.items()))
    return lines


def _extras(res: dict[str, Any]) -> list[str]:
    lines = ["## Uniformity testing (PUT, AUT)", ""]
    u = res["uniformity"]
    lines += [
        f"Smallest n reaching power {u['power']} at size {u['size']} against Paninski's "
        f"alternative at TV distance {u['alpha']} (eps_c = {res['defaults']['eps']}):",
        "",
        "| k | PUT n | AUT n | non-private n | PUT msg/user | AUT msg/user |",
        "|---|---|---|---|---|---|",
    ]
    for r in u["rows"]:
        lines.append(
            f"| {r['k']} | {_fmt(r['put_n'])} | {_fmt(r['aut_n'])} | {_fmt(r['nonprivate_n'])} | "
            f"{_fmt(r['put_messages_per_user'])} | {_fmt(r['aut_messages_per_user'])} |"
        )
    lines += [
        "",
        f"Fitted exponents of n in k: { ({k: _fmt(v) for k, v in u['k_exponents'].items()}) }.",
    ]
    rg = res["range"]
    lines += [
        "",
        "## Range counting",
        "",
        f"n = {rg['n']}, d = {rg['d']}, eps_c = {rg['eps']}, {rg['queries']} random ranges:",
        "",
        "| method | RMSE (random ranges) | analyzer s | messages/user |",
        "|---|---|---|---|",
    ]
    for r in rg["rows"]:
        if r["status"] != "ok":
            lines.append(f"| {r['method']} | {r['status'][:70]} | | |")
        else:
            lines.append(
                f"| {r['method']} | {_fmt(r['rmse_random_ranges'])} | "
                f"{_fmt(r['analyzer_seconds'])} | {_fmt(r['messages_per_user'])} |"
            )
    rb = res["robustness"]
    lines += [
        "",
        "## Robustness (gamma) and dropped users",
        "",
        "| gamma | Cnt_SGM RMSE | Cnt_SGM msg | Cnt_BN RMSE | Cnt_BN msg | RSum_DSG noise RMSE |",
        "|---|---|---|---|---|---|",
    ]
    for r in rb["cost"]:
        lines.append(
            f"| {r['gamma']} | {_fmt(r['cnt_sgm_rmse'])} | {_fmt(r['cnt_sgm_messages'])} | "
            f"{_fmt(r['cnt_bn_rmse'])} | {_fmt(r['cnt_bn_messages'])} | {_fmt(r['rsum_dsg_noise_rmse'])} |"
        )
    lines += ["", f"Guarantees re-accounted when only 90% of n = {rb['n']} users arrive:", ""]
    for r in rb["dropout_10pct"]:
        lines.append(f"- {r['protocol']}: eps {_fmt(r['eps'], 4)}, delta {_fmt(r['delta'])}")
    return lines


def markdown(res: dict[str, Any]) -> str:
    """The whole report."""
    d = res["defaults"]
    lines = [
        "# Seed 004 (shuffle-DP survey): reproduction of the experimental comparison",
        "",
        f"Plan `{res['plan']}`, seed {res['seed']}, {res['seconds']:.0f} s. Defaults: n = {d['n']}, "
        f"eps_c = {d['eps']}, q = {d['q']}, delta = {d['delta']:g}, d = {d['d']}. Data: "
        "Bernoulli(q) bits, round(N((d-1)/2, (d/6)^2)) clipped to [0, d), N(0.5, 0.15^2) clipped "
        "to [0, 1]. RMSE is absolute (count, per-bin count, sum) over repetitions (and bins); "
        "'expected RMSE' is the exact value from the estimator's variance where it is known "
        "(unbiased methods); comparisons use it when available. Analyzer seconds: median wall "
        "time of the real analyzer on the encoded batches. Messages per user: measured.",
        "",
        "## Fig. 7: every method at the defaults",
        "",
        *_defaults_table(res),
        "",
        "![defaults](fig7_defaults.png)",
        "",
        "### Orderings (survey methods)",
        "",
        *orderings(res),
        "",
        "### Closing note: the survey's orderings and ours",
        "",
        *comparison(res),
        "",
        "## Claims C1-C16",
        "",
        "| claim | verdict | evidence |",
        "|---|---|---|",
    ]
    for c, v in res["claims"].items():
        lines.append(f"| {c} | {v['verdict']} | {v['evidence']} |")
    for key, title in FIGS.items():
        lines += [
            "",
            f"## {title}",
            "",
            f"![{key}]({key}.png)",
            "",
            "Cells: RMSE / analyzer s / messages per user.",
            "",
        ]
        lines += _sweep_table(res, key)
    lines += ["", "## Amplification tables (Tables 1-4)", "", *_accountant(res), ""]
    sm = res["splitmix"]
    sc = res["scaling"]
    lines += [
        "## Split-Mix and summation scaling",
        "",
        f"- Split-Mix messages (32-bit inputs, sigma = 40) by n: {sm['c13_shares_by_n']}.",
        f"- Single-message (p = n^(1/3)) exact MSE by n: { ({k: _fmt(v) for k, v in sc['c14_single_message_mse_by_n'].items()}) }.",
        f"- RSum_RM (m = 3) exact RMSE by n: { ({k: _fmt(v) for k, v in sc['rsum_rm3_rmse_by_n'].items()}) }.",
        f"- RSum_DSG exact RMSE by n: { ({k: _fmt(v) for k, v in sc['c15_dsg_rmse_by_n'].items()}) }; "
        f"shares by n: {sc['c15_dsg_shares_by_n']}.",
        "",
        *_extras(res),
        "",
        *newer.markdown(res),
        "",
    ]
    return "\n".join(lines)
