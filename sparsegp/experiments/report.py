"""Summaries of a grid's records and the markdown table beside the paper's numbers."""
import numpy as np


def fit_seconds(record):
    """A record's fit time: its CPU seconds, or its wall seconds if it predates them.

    Cells run one thread each, so CPU time is the fit's cost; wall time also counts the time a
    niced run waited for a busy machine (a 0.2 s fit once recorded 541 s).
    """
    return record.get("cpu_time", record["fit_time"])


def summarise(records, cells):
    """Mean, standard error and count per (data set, method, size) over splits.

    Parameters
    ----------
    records : dict
        key -> record, as :func:`run_grid` returns under ``"records"``.
    cells : sequence of Cell
        The grid; cells without an "ok" record count as missing.

    Returns
    -------
    dict
        (dataset, method, size) -> {"error": (mean, se), "nlp": (mean, se), "n": int,
        "failed": int, "fit_time": total seconds (:func:`fit_seconds`)}, plus
        "n_support_vectors": (mean, se) when the records have it (the SVM). ``se`` is std(ddof=1)/sqrt(n), 0 when n < 2.
    """
    groups = {}
    for cell in cells:
        g = groups.setdefault((cell.dataset, cell.method, cell.size), {"ok": [], "failed": 0})
        rec = records.get(cell.key)
        if rec is None:
            continue
        if rec.get("status") == "ok":
            g["ok"].append(rec)
        else:
            g["failed"] += 1
    out = {}
    for k, g in groups.items():
        row = {"n": len(g["ok"]), "failed": g["failed"],
               "fit_time": float(sum(fit_seconds(r) for r in g["ok"]))}
        for metric in ("error", "nlp", "n_support_vectors"):
            if metric == "n_support_vectors" and not any(metric in r for r in g["ok"]):
                continue
            v = np.array([r[metric] for r in g["ok"]], dtype=float)
            mean = float(v.mean()) if v.size else float("nan")
            se = float(v.std(ddof=1) / np.sqrt(v.size)) if v.size > 1 else 0.0
            row[metric] = (mean, se)
        out[k] = row
    return out


def outside(mean, se, n, paper, paper_se=0.0, resolution=0.0):
    """True when our mean and the paper's differ by more than twice their combined error bar.

    The two means are independent estimates, so their difference has standard error
    sqrt(se^2 + paper_se^2). A value the paper prints to a unit ``resolution`` stands for any
    value within half of it, so only the distance beyond that half-unit counts. With one split
    we have no error bar, and nothing is marked.

    Parameters
    ----------
    mean, se : float
        Ours: mean and standard error over ``n`` splits.
    n : int
    paper : float
        The paper's printed value.
    paper_se : float, default=0.0
        The paper's printed error bar (seed 002 prints them; seed 000 does not).
    resolution : float, default=0.0
        The unit of the paper's last printed digit (:attr:`Table.paper_resolution`).
    """
    gap = abs(mean - paper) - 0.5 * resolution
    return n >= 2 and gap > 2.0 * float(np.hypot(se, paper_se))


def _run(cell):
    """The run a cell belongs to: its split and seed. Seed 003's ten runs share MNIST's one
    official split and differ by their seed only; elsewhere the seed is the split's index."""
    return cell.split, cell.seed


def _by_split(records, cells, metric):
    """(dataset, method, size) -> {run: record[metric]} over the cells with an "ok" record
    that has the field; runs as :func:`_run`."""
    out = {}
    for cell in cells:
        rec = records.get(cell.key)
        if rec is not None and rec.get("status") == "ok" and metric in rec:
            out.setdefault((cell.dataset, cell.method, cell.size), {})[_run(cell)] = rec[metric]
    return out


def _paired(ours, theirs):
    """(mean, s.e. or None with one split, n) of ours - theirs over their common splits
    ({split: value} each), or None when they share no split."""
    common = sorted(set(ours) & set(theirs), key=str)
    if not common:
        return None
    diff = np.array([ours[k] - theirs[k] for k in common])
    se = float(diff.std(ddof=1) / np.sqrt(diff.size)) if diff.size > 1 else None
    return float(diff.mean()), se, int(diff.size)


def paired_differences(summary_keys, records, cells, key, metric, paper, by_split=None):
    """Ours minus each other method on the same splits, beside the paper's difference.

    A cell outside the paper's error bar is read against the other methods: when the paired
    differences equal the paper's, the offset is shared by every method on our splits (the
    data or the splits), not the method's own.

    Parameters
    ----------
    summary_keys : iterable of (dataset, method, size)
        The table's rows (keys of :func:`summarise`).
    records : dict
        key -> record.
    cells : sequence of Cell
    key : (dataset, method, size)
        The row to compare.
    metric : {"error", "nlp"}
    paper : dict
        The table's ``paper`` mapping.
    by_split : dict, optional
        ``_by_split(records, cells, metric)``, when the caller already has it (a table reads
        many rows against the same records).

    Returns
    -------
    list of (method, size, mean, se, n, paper_difference or None)
        One entry for each other method on the same data set at the same size, or at its one
        size when the table gives it only one (seed 000's rows); splits where both fitted.
    """
    d, m, size = key
    by_split = _by_split(records, cells, metric) if by_split is None else by_split
    sizes = {}
    for (d2, m2, s2) in summary_keys:
        if d2 == d:
            sizes.setdefault(m2, []).append(s2)
    ours = by_split.get(key, {})
    out = []
    for m2, s2s in sizes.items():
        if m2 == m:
            continue
        for s2 in s2s:
            if s2 != size and len(s2s) > 1:
                continue
            got = _paired(ours, by_split.get((d, m2, s2), {}))
            if got is None:
                continue
            mean, se, n = got
            p_ours = paper.get(key, {}).get(metric)
            p_theirs = paper.get((d, m2, s2), {}).get(metric)
            p_diff = None if p_ours is None or p_theirs is None else p_ours - p_theirs
            out.append((m2, s2, mean, 0.0 if se is None else se, n, p_diff))
    return out


def _verdict(diff, se, n, resolution=0.0):
    """The sign of a difference a - b with standard error ``se``, or "=" if within its bar.

    "<" (a lower than b) or ">" when |a - b| exceeds twice ``se`` by more than ``resolution``
    (two printed values rounded to the paper's last digit differ by up to one unit of it),
    else "="; None without an error bar (one split, or a paper that prints none).
    """
    if se is None or n < 2:
        return None
    if abs(diff) - resolution <= 2.0 * se:
        return "="
    return "<" if diff < 0 else ">"


def comparison_rows(table, cells, records):
    """The differences the paper draws conclusions from, on our splits and in the paper.

    For each (a, b) of ``table.comparisons``, each data set and each size of a: a - b in test
    error and mean NLP over the splits where both fitted (mean, standard error, count), the
    paper's a - b, and the ratio of their mean CPU seconds over the splits where both records
    have them. A size of a pairs with the same size of b, or with b's one size when b has only
    one (seed 000's methods each have one per data set).

    Returns
    -------
    list of dict
        Keys ``a``, ``b``, ``dataset``, ``size`` (a's), ``b_size``, ``cpu_ratio`` (None without
        CPU seconds on common splits, e.g. records that predate them) and, per metric
        ("error", "nlp"): ``(mean, se, n)`` or None when no split has both, ``paper_<metric>``
        (the paper's a - b or None), ``paper_<metric>_se`` (sqrt of the sum of its two printed
        squared error bars, None where it prints none), and ``verdict_<metric>`` and
        ``paper_verdict_<metric>``: "<", ">" or "=" (:func:`_verdict`), None without an error
        bar; ``cpu_ratio_refit``: a's CPU seconds over b's final fit alone (the SVM's
        ``refit_time``, without its grid search), None where b's records lack it;
        ``paper_time_ratio``: the paper's training time of a over b where it prints both for
        the data set (seed 003), else None.
    """
    by_split = {metric: _by_split(records, cells, metric)
                for metric in ("error", "nlp", "cpu_time", "refit_time")}
    sizes = {}
    for cell in cells:
        got = sizes.setdefault((cell.dataset, cell.method), [])
        if cell.size not in got:
            got.append(cell.size)
    out = []
    for a, b in table.comparisons:
        for d in table.datasets:
            b_sizes = sizes.get((d, b), [])
            for size in sizes.get((d, a), []):
                b_size = size if size in b_sizes else (b_sizes[0] if len(b_sizes) == 1
                                                       else None)
                if b_size is None and None not in b_sizes:
                    continue
                row = {"a": a, "b": b, "dataset": d, "size": size, "b_size": b_size}
                for metric in ("error", "nlp"):
                    ours = by_split[metric].get((d, a, size), {})
                    theirs = by_split[metric].get((d, b, b_size), {})
                    row[metric] = _paired(ours, theirs)
                    row[f"verdict_{metric}"] = (None if row[metric] is None
                                                else _verdict(*row[metric]))
                    pa = table.paper.get((d, a, size), {})
                    pb = table.paper.get((d, b, b_size), {})
                    p_diff = (pa[metric] - pb[metric] if metric in pa and metric in pb
                              else None)
                    p_se = (float(np.hypot(pa[f"{metric}_se"], pb[f"{metric}_se"]))
                            if f"{metric}_se" in pa and f"{metric}_se" in pb else None)
                    row[f"paper_{metric}"], row[f"paper_{metric}_se"] = p_diff, p_se
                    row[f"paper_verdict_{metric}"] = (
                        None if p_diff is None else
                        _verdict(p_diff, p_se, table.folds, table.paper_resolution))
                ca = by_split["cpu_time"].get((d, a, size), {})
                cb = by_split["cpu_time"].get((d, b, b_size), {})
                common = [k for k in ca if k in cb]
                row["cpu_ratio"] = (float(sum(ca[k] for k in common)
                                          / sum(cb[k] for k in common))
                                    if common and sum(cb[k] for k in common) > 0 else None)
                # b's final fit alone where its records have it (the SVM: without its grid
                # search, as the papers time it), over the splits where both have times
                rb = by_split["refit_time"].get((d, b, b_size), {})
                common = [k for k in ca if k in rb]
                row["cpu_ratio_refit"] = (float(sum(ca[k] for k in common)
                                                / sum(rb[k] for k in common))
                                          if common and sum(rb[k] for k in common) > 0
                                          else None)
                row["paper_time_ratio"] = (pa["time"] / pb["time"]
                                           if pa.get("time") and pb.get("time") else None)
                out.append(row)
    return out


def time_ratios(table, cells, records):
    """a / b in fit time for each pair of ``table.comparisons`` and each size, pooled.

    Ours: total CPU seconds of a over total of b, over the (data set, split) pairs where both
    records have CPU seconds, which weighs the data sets as the paper's mean over every set
    and fold does. The paper's: the ratio of its mean times (``table.paper_time``); absolute
    seconds do not carry over between machines, ratios roughly do.

    Returns
    -------
    dict
        (a, b, size) -> (ours or None, pairs used, paper's or None); sizes of a that b shares.
    """
    cpu = _by_split(records, cells, "cpu_time")
    sizes = {}
    for cell in cells:
        got = sizes.setdefault(cell.method, [])
        if cell.size not in got:
            got.append(cell.size)
    out = {}
    for a, b in table.comparisons:
        for size in sizes.get(a, []):
            if size not in sizes.get(b, []):
                continue
            ta = tb = 0.0
            n = 0
            for d in table.datasets:
                ca, cb = cpu.get((d, a, size), {}), cpu.get((d, b, size), {})
                for split in set(ca) & set(cb):
                    ta, tb, n = ta + ca[split], tb + cb[split], n + 1
            pa, pb = table.paper_time.get((a, size)), table.paper_time.get((b, size))
            out[(a, b, size)] = (ta / tb if n and tb > 0 else None, n,
                                 pa / pb if pa is not None and pb else None)
    return out


def _comparison_markdown(table, rows, ratios=None):
    """The comparisons section of :func:`markdown`: one table and one tally per pair."""
    dp = _decimals(table)
    lines = ["", "## The paper's comparisons, on the same splits", "",
             "Each row: a − b over the splits where both methods fitted (mean ± s.e., n), the "
             "paper's a − b beside it (± sqrt(s.e.a² + s.e.b²) where it prints error bars), "
             "and a / b in CPU seconds over the splits where both records have them (for an "
             "SVM b also a over its final SVC fit alone, without the grid search; and the "
             "paper's a / b where it prints each data set's training times). Sign: "
             "**<** a lower (better) than b, **>** higher (worse), **=** within twice the "
             "error bar (the paper's also within one unit of its last printed digit); no "
             "sign without an error bar. (`sparsegp.experiments.report.comparison_rows`)"]
    for a, b in table.comparisons:
        mine = [r for r in rows if (r["a"], r["b"]) == (a, b)]
        if not mine:
            continue
        # seed 003 prints each task's training times: its a / b goes beside ours, and
        # beside a / (b's final fit alone) when b is the SVM, whose CPU includes its search
        refits = any(r.get("cpu_ratio_refit") is not None for r in mine)
        paper_times = any(r.get("paper_time_ratio") is not None for r in mine)
        lines += ["", f"### {a} − {b}", "",
                  "| data set | size | test error: ours | paper | mean NLP: ours | paper | "
                  "CPU a / b |" + (" CPU a / b's final fit |" if refits else "")
                  + (" paper's time a / b |" if paper_times else ""),
                  "|---|---|---|---|---|---|---|" + ("---|" if refits else "")
                  + ("---|" if paper_times else "")]
        tally = {}
        for r in mine:
            txt = []
            for metric in ("error", "nlp"):
                ours = r[metric]
                if ours is None:
                    txt.append("–")
                else:
                    mean, se, n = ours
                    txt.append(f"{mean:+.{dp}f}" + ("" if se is None else f" ± {se:.{dp}f}")
                               + f", n = {n}" + (f" **{r[f'verdict_{metric}']}**"
                                                 if r[f"verdict_{metric}"] else ""))
                p = r[f"paper_{metric}"]
                p_se = r[f"paper_{metric}_se"]
                pv = r[f"paper_verdict_{metric}"]
                txt.append("–" if p is None else f"{p:+.{dp}f}"
                           + ("" if p_se is None else f" ± {p_se:.{dp}f}")
                           + (f" **{pv}**" if pv else ""))
                t = tally.setdefault(metric, {"ours": {}, "paper": {}})
                for who, v in (("ours", r[f"verdict_{metric}"]), ("paper", pv)):
                    if v is not None:
                        t[who][v] = t[who].get(v, 0) + 1
            ratio = "–" if r["cpu_ratio"] is None else f"{r['cpu_ratio']:.2f}"
            for show, name in ((refits, "cpu_ratio_refit"), (paper_times, "paper_time_ratio")):
                if show:
                    ratio += " | " + ("–" if r.get(name) is None else f"{r[name]:.2f}")
            lines.append(f"| {r['dataset']} | {_size_label(r['size'])} | " + " | ".join(txt)
                         + f" | {ratio} |")
        lines.append("")
        for metric, name in (("error", "test error"), ("nlp", "mean NLP")):
            t = tally.get(metric, {"ours": {}, "paper": {}})
            parts = []
            for who in ("ours", "paper"):
                c = t[who]
                if c:
                    parts.append(f"{who}: {a} lower in {c.get('<', 0)}, higher in "
                                 f"{c.get('>', 0)}, level in {c.get('=', 0)} of "
                                 f"{sum(c.values())}")
            if parts:
                lines.append(f"- {name}, {a} − {b}: " + "; ".join(parts) + ".")
        times = [(size, got) for (a2, b2, size), got in sorted((ratios or {}).items(),
                                                               key=lambda kv: str(kv[0]))
                 if (a2, b2) == (a, b) and (got[0] is not None or got[2] is not None)]
        if times:
            lines.append(f"- fit time, {a} / {b}, pooled over every data set (ours: CPU s "
                         "on the splits where both have them; the paper's: its mean times): "
                         + "; ".join(f"{_size_label(size)} ours "
                                     + ("–" if ours is None else f"{ours:.2f} (n = {n})")
                                     + ", paper " + ("–" if paper is None else f"{paper:.2f}")
                                     for size, (ours, n, paper) in times) + ".")
    return lines


def _paper_text(value, se, dp=3):
    return f"{value:.{dp}f}" if se is None else f"{value:.{dp}f} ± {se:.{dp}f}"


def _decimals(table):
    """Decimals to print a table's errors and NLPs with: three, or down to the paper's last
    printed digit when it prints finer (seed 003's 0.22 % is 0.0022, and at three decimals
    every MNIST cell would read 0.002)."""
    if table.paper_resolution <= 0:
        return 3
    return max(3, int(np.ceil(-np.log10(table.paper_resolution) - 1e-9)))


def _size_label(size):
    if size is None:
        return "–"
    return f"{size:.0%}" if isinstance(size, float) else str(size)


def progress(cells, records):
    """How far a grid has got, and an estimate of the CPU time its missing cells need.

    A missing cell is costed at the mean fit time of the done cells of its (data set, method,
    size), else of its (data set, method): CPU seconds where any of those records have them
    (wall seconds of niced runs also count time spent waiting for the machine), else wall
    seconds, which makes the estimate an upper bound.

    Parameters
    ----------
    cells : sequence of Cell
    records : dict
        key -> record.

    Returns
    -------
    dict
        ``"done"`` (cells with any record), ``"failed"``, ``"total"``, ``"splits"``: dataset ->
        (splits with every cell done, splits in the grid), ``"cpu_left"``: estimated seconds
        for the missing cells that have a basis, ``"from_wall"``: how many of those were costed
        from wall seconds, and ``"no_basis"``: missing cells with no done cell to cost them by.
    """
    done = failed = 0
    per_split, missing = {}, []
    times = {}   # (dataset, method, size) and (dataset, method) -> {"cpu": [...], "wall": [...]}
    for cell in cells:
        rec = records.get(cell.key)
        done += rec is not None
        failed += rec is not None and rec.get("status") != "ok"
        ok = per_split.setdefault(cell.dataset, {}).setdefault(_run(cell), True)
        per_split[cell.dataset][_run(cell)] = ok and rec is not None
        if rec is None:
            missing.append(cell)
        elif rec.get("status") == "ok":
            kind, value = (("cpu", rec["cpu_time"]) if "cpu_time" in rec
                           else ("wall", rec["fit_time"]))
            for group in ((cell.dataset, cell.method, cell.size), (cell.dataset, cell.method)):
                times.setdefault(group, {"cpu": [], "wall": []})[kind].append(value)
    cpu_left, from_wall, no_basis = 0.0, 0, 0
    for cell in missing:
        basis = (times.get((cell.dataset, cell.method, cell.size))
                 or times.get((cell.dataset, cell.method)))
        if basis is None:
            no_basis += 1
            continue
        kind = "cpu" if basis["cpu"] else "wall"
        from_wall += kind == "wall"
        cpu_left += float(np.mean(basis[kind]))
    splits = {d: (sum(v.values()), len(v)) for d, v in per_split.items()}
    return {"done": done, "failed": failed, "total": len(cells), "splits": splits,
            "cpu_left": cpu_left, "from_wall": from_wall, "no_basis": no_basis}


def markdown(table, cells, records, wall=None, command=None):
    """Markdown of ``table``: ours (mean ± s.e., folds) beside the paper, outliers marked.

    Parameters
    ----------
    table : Table
    cells : sequence of Cell
    records : dict
        key -> record.
    wall : float, optional
        Wall time (s) of the run that wrote this.
    command : str, optional
        The command line, shown so the table can be remade.

    Returns
    -------
    str
    """
    summary = summarise(records, cells)
    dp = _decimals(table)
    cpu = sum(r["fit_time"] for r in summary.values())
    # tables with an SVM get a support-vector column (the paper prints #SV beside its error)
    with_sv = any("n_support_vectors" in ref for ref in table.paper.values())
    lines = [f"# {table.title}", ""]
    if command:
        lines += [f"Made by `{command}`.", ""]
    got = progress(cells, records)
    lines += [f"Progress: {got['done']} of {got['total']} cells have a record "
              f"({got['failed']} failed). Whole splits (every method and size) per data set: "
              + ", ".join(f"{d} {k} of {n}" for d, (k, n) in sorted(got["splits"].items()))
              + "."]
    if got["done"] < got["total"]:
        left = got["total"] - got["done"]
        lines[-1] += (f" Estimated CPU time of the {left} missing cells: "
                      f"{got['cpu_left'] / 3600:.1f} CPU-hours"
                      + (f", {got['from_wall']} of them costed from wall seconds (an upper "
                         "bound)" if got["from_wall"] else "")
                      + (f"; {got['no_basis']} with no done cell of their data set and method "
                         "to cost them by" if got["no_basis"] else "")
                      + " (`sparsegp.experiments.report.progress`).")
    lines.append("")
    lines += ["Cells: ours as mean ± standard error over `n` splits, then the paper's value "
              "(± its error bar where it prints one). **†** marks a cell where ours and the "
              "paper's differ by more than twice their combined standard error, "
              "sqrt(s.e.² + paper's s.e.²), beyond half a unit of the paper's last printed "
              f"digit ({table.paper_resolution:g}); n ≥ 2 (`sparsegp.experiments.report."
              "outside`). Fit time is the total "
              "over the cell's splits, each fit on one thread: CPU seconds (wall seconds for "
              "cells recorded before CPU time was)."
              + (" '–' in a paper column: the paper prints no such number (e.g. no NLP for "
                 "an SVM). #SV: support vectors of the SVM (mean over splits), the paper's "
                 "beside. The SVM's fit time includes its cross-validation."
                 if with_sv else ""), "",
              "| data set | method | size | n | failed | test error | paper | mean NLP | paper "
              "| fit time (s) |" + (" #SV | paper |" if with_sv else ""),
              "|---|---|---|---|---|---|---|---|---|---|" + ("---|---|" if with_sv else "")]
    marked = []
    by_split = {metric: _by_split(records, cells, metric) for metric in ("error", "nlp")}
    for (d, m, size), row in summary.items():
        ref = table.paper.get((d, m, size), {})
        cells_txt = []
        for metric in ("error", "nlp"):
            mean, se = row[metric]
            p, p_se = ref.get(metric), ref.get(f"{metric}_se")
            flag = p is not None and outside(mean, se, row["n"], p, p_se or 0.0,
                                             table.paper_resolution)
            if flag:
                pairs = paired_differences(summary, records, cells, (d, m, size), metric,
                                           table.paper, by_split=by_split[metric])
                text = (f"{d} / {m} / {_size_label(size)} / {metric}: ours "
                        f"{mean:.{dp}f} ± {se:.{dp}f}, paper {_paper_text(p, p_se, dp)}")
                if pairs:
                    text += ("; minus the other methods on the same splits (paper's "
                             "difference in brackets): " + ", ".join(
                                 f"{m2} {mu:+.{dp}f} ± {s:.{dp}f}, n = {n} ("
                                 + ("–" if pd is None else f"{pd:+.{dp}f}") + ")"
                                 for m2, _, mu, s, n, pd in pairs))
                marked.append(text)
            ours = "–" if row["n"] == 0 else f"{mean:.{dp}f} ± {se:.{dp}f}"
            ours += " **†**" if flag else ""
            cells_txt += [ours, "–" if p is None else _paper_text(p, p_se, dp)]
        line = (f"| {d} | {m} | {_size_label(size)} | {row['n']} | {row['failed']} | "
                + " | ".join(cells_txt) + f" | {row['fit_time']:.1f} |")
        if with_sv:
            # a count, compared by eye: no † (the paper's grids and solvers differ from ours)
            sv, p = row.get("n_support_vectors"), ref.get("n_support_vectors")
            line += (" – |" if sv is None or row["n"] == 0 else f" {sv[0]:.0f} |")
            line += (" – |" if p is None else f" {p} |")
        lines.append(line)
    lines += ["", f"Total fit time: {cpu:.0f} s = {cpu / 3600:.2f} CPU-hours."]
    if wall is not None:
        lines.append(f"Wall time of the run that wrote this file: {wall:.0f} s.")
    lines += ["", "## Cells outside the combined error bars (†)", ""]
    lines += [f"- {t}" for t in marked] or ["- none"]
    if table.comparisons:
        lines += _comparison_markdown(table, comparison_rows(table, cells, records),
                                      time_ratios(table, cells, records))
    return "\n".join(lines) + "\n"
