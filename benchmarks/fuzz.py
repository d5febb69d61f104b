"""Fuzz every public estimator at its defaults on random small problems (issue 49, item 6).

Each fit draws one problem: N in [2, 300] rows (log-uniform, so small sets are common), D in
[1, 20] features whose scales span 1e-3 to 1e3, sometimes constant columns, duplicated rows
and flipped labels. Binary classifiers get 2 classes, multi-class ones 2-5, the regressor a
smooth function plus noise. Problem ``i`` of ``--seed s`` is the same for every estimator and
every run, and the estimator's ``random_state`` is ``i``, so a count is reproducible.

Counted per estimator (a fit can land in several columns):

* ``exception``: anything raised by fit or predict other than a ``ValueError`` (a clear
  refusal, e.g. a class with too few rows, is counted apart as ``value_error``);
* ``nonfinite``: NaN or inf in predictions, probabilities or predictive standard deviations;
* ``bad_proba``: a probability outside [0, 1] or a row summing to 1 off by more than 1e-9;
* ``hang``: a fit (with its predictions) over ``--time-limit`` seconds of its worker's CPU
  time (all threads; wall time where ``/proc`` is missing), or over :data:`HANG_WALL_FACTOR`
  times that in wall time (a fit blocked without computing); its worker is killed. CPU time,
  because a worker stopped or starved by other jobs is not a hanging fit;
* ``flat_silent``: a classifier predicting one class for every training row without a
  ``ConvergenceWarning`` while a standardised logistic regression on the same rows has
  training accuracy at least ``SIGNAL_MARGIN`` above the majority rate. For the regressor:
  predictions constant (spread below 1e-6 of the s.d. of y) with no warning while a linear
  fit explains at least ``SIGNAL_MARGIN`` of the variance. The classifiers' end-of-fit check
  (``sparsegp/classification/_frequencies.py``) warns on such a fit with the same logistic
  regression and margin, so this count checks that the check fires where it must; it does
  not ask whether the logistic regression's training lead holds on new rows (on the first
  run's 18 silent fits it did in 5, ``benchmarks/FUZZ.md``).

``warned`` counts fits that gave a ``ConvergenceWarning`` (not a failure: the defence that
stops a flat fit from being silent). Each fit runs in a worker process, so a hang or a crash
of the interpreter costs one fit, not the run.

``--results FILE`` appends every outcome to a JSON-lines file as it arrives and, when the file
exists, runs only the fits it lacks (same seed and estimator and problem index): a long run
(``--fits 10000``) that is stopped resumes where it was, across sessions and machines, and the
table is made from every outcome in the file for the requested fits.

    python benchmarks/fuzz.py --fits 200 --workers 2
    python benchmarks/fuzz.py --fits 10000 --results fuzz_seed0.jsonl    # resumable
    python benchmarks/fuzz.py --estimators "GFITCClassifier,SparseGPRegressor(dtc)" --fits 50
    python benchmarks/fuzz.py --estimators GFITCClassifier --problem 47    # one problem, verbose
"""
import argparse
import contextlib
import json
import multiprocessing
import os
import sys
import time
import traceback
import warnings
from multiprocessing.connection import wait

import numpy as np

#: Binary classifiers (two classes), multi-class ones (2-5 classes) and the regressor's
#: approximations, by the names the table uses
BINARY = ("EPClassifier", "GFITCClassifier", "IVMClassifier", "StagewiseGPClassifier")
MULTICLASS = ("MultiClassEPClassifier", "MultiClassGFITCClassifier", "MultiClassSVGPClassifier")
APPROXIMATIONS = ("sod", "sor", "dtc", "fitc", "fic", "pitc", "vfe", "exact")
ESTIMATORS = BINARY + MULTICLASS + tuple(f"SparseGPRegressor({a})" for a in APPROXIMATIONS)

#: The failure columns of the table, in order, then the informative ones
FAILURES = ("exception", "nonfinite", "bad_proba", "hang", "flat_silent")
COLUMNS = ("ok",) + FAILURES + ("value_error", "warned")
#: The thread counts a worker pins to one, through the environment it starts with
THREAD_VARS = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS", "NUMBA_NUM_THREADS")
#: A fit is also a hang once its wall time passes this many time limits, whatever its CPU time
HANG_WALL_FACTOR = 10.0
#: The harness polls its workers at least every second; a longer gap between two polls means
#: the harness itself was stopped (SIGSTOP) or starved, and only this much of it counts toward
#: a fit's wall time (a run stopped for half an hour is not a half-hour fit)
MAX_POLL_GAP = 5.0
#: A probability row may sum to 1 off by at most this
PROBA_SUM_TOL = 1e-9
#: How far above the majority rate (accuracy) or zero (R²) the linear baseline must be for
#: the data to hold signal
SIGNAL_MARGIN = 0.1
#: Training targets spanning at most this fraction of their largest magnitude are constant:
#: a target built as a sum of terms can differ from row to row in its last bits only, and a
#: linear fit then "explains" that round-off (fuzz seed 0, problem 2023: R² 1.0 on targets
#: -7.91 +- 1 ulp), which is no signal for a model to miss
CONSTANT_TARGET_RTOL = 1e-12
#: Held-out rows predicted besides the training rows
N_TEST = 50


def problem(seed, index, kind, max_rows=300):
    """Problem ``index`` of fuzz ``seed``.

    Parameters
    ----------
    seed, index : int
    kind : {"binary", "multiclass", "regression"}
    max_rows : int, default=300
        Largest N (the test suite's slice draws smaller problems to stay quick).

    Returns
    -------
    X : ndarray of shape (N + N_TEST, D)
        The first N rows are for training.
    y : ndarray of shape (N + N_TEST,)
        Integer labels, or real targets for ``"regression"``.
    N : int
    """
    # one stream per (seed, index): the same X for every estimator, whatever kind of y
    rng = np.random.default_rng([seed, index])
    N = int(np.clip(np.round(np.exp(rng.uniform(np.log(2), np.log(max_rows)))), 2, max_rows))
    D = int(rng.integers(1, 21))
    n = N + N_TEST
    Z = rng.standard_normal((n, D))
    if D > 1 and rng.random() < 0.25:
        Z[:, rng.choice(D, size=int(rng.integers(1, D)), replace=False)] = rng.standard_normal()
    if N > 3 and rng.random() < 0.25:
        # duplicated training rows: copies of some rows replace others
        k = int(rng.integers(1, N // 2 + 1))
        Z[rng.choice(N, size=k, replace=False)] = Z[rng.choice(N, size=k)]
    # the labels or targets depend on a few of the (standardised) features
    w = rng.standard_normal(D) * (rng.random(D) < min(1.0, 3.0 / D))
    if not w.any():
        w[rng.integers(D)] = 1.0
    scale = 10.0 ** rng.uniform(-3, 3, D)
    shift = rng.choice([0.0, 1.0], size=D) * rng.standard_normal(D) * scale * 10.0
    X = Z * scale + shift
    noise = rng.uniform(0.0, 0.3)
    if kind == "regression":
        f = np.sin(Z @ w) + 0.5 * (Z @ w)
        return X, f + noise * f.std() * rng.standard_normal(n) + rng.standard_normal() * 10, N
    n_classes = 2 if kind == "binary" else int(rng.integers(2, 6))
    W = np.column_stack([w] + [rng.standard_normal(D) * (w != 0) for _ in range(n_classes - 1)])
    y = np.argmax(Z @ W + 0.3 * np.sin(3 * Z @ W), axis=1)
    flip = rng.random(n) < noise
    y[flip] = rng.integers(0, n_classes, size=int(flip.sum()))
    return X, y, N


def kind_of(name):
    """'binary', 'multiclass' or 'regression' for an estimator name of :data:`ESTIMATORS`."""
    if name in BINARY:
        return "binary"
    return "multiclass" if name in MULTICLASS else "regression"


def make_estimator(name, random_state):
    """The estimator ``name`` at its defaults, but for ``random_state`` where it has one."""
    import sparsegp
    if name.startswith("SparseGPRegressor("):
        est = sparsegp.SparseGPRegressor(approximation=name[len("SparseGPRegressor("):-1])
    else:
        est = getattr(sparsegp, name)()
    if "random_state" in est.get_params():
        est.set_params(random_state=random_state)
    return est


def baseline_signal(X, y, N, kind):
    """Does a linear model find signal in (X, y)? Fitted on the first N rows: its training
    accuracy minus the majority rate (classification), or its R² on the held-out rows
    (regression, where a linear fit of N <= D + 1 rows is exact on them whatever the data)."""
    from sklearn.linear_model import LinearRegression, LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    # constant training targets (to round-off) or one class: nothing to find
    if np.ptp(y[:N]) <= CONSTANT_TARGET_RTOL * np.max(np.abs(y[:N]), initial=0.0):
        return 0.0
    if kind == "regression":
        model = make_pipeline(StandardScaler(), LinearRegression()).fit(X[:N], y[:N])
        return model.score(X[N:], y[N:])
    X, y = X[:N], y[:N]
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(X, y)
    return model.score(X, y) - np.bincount(y).max() / y.size


def check_outputs(est, X, y, kind):
    """The failure flags of a fitted estimator's outputs on the rows X (training rows first).

    Returns
    -------
    flags : dict
        ``nonfinite``, ``bad_proba`` (bool) and ``constant`` (bool: one class for every
        training row, or regression predictions constant to 1e-6 of the s.d. of y).
    """
    n_train = y.size
    if kind == "regression":
        mean, std = est.predict(X, return_std=True)
        nonfinite = not (np.all(np.isfinite(mean)) and np.all(np.isfinite(std))
                         and np.all(std >= 0))
        spread = np.ptp(mean[:n_train]) if n_train > 0 else 0.0
        return dict(nonfinite=nonfinite, bad_proba=False,
                    constant=bool(spread <= 1e-6 * max(np.std(y), 1e-300)))
    proba = np.asarray(est.predict_proba(X))
    labels = np.asarray(est.predict(X))
    nonfinite = not np.all(np.isfinite(proba))
    bad_proba = bool(proba.shape != (X.shape[0], est.classes_.size)
                     or np.any(proba < 0) or np.any(proba > 1)
                     or np.any(np.abs(proba.sum(axis=1) - 1) > PROBA_SUM_TOL))
    return dict(nonfinite=nonfinite, bad_proba=bad_proba,
                constant=bool(np.unique(labels[:n_train]).size == 1))


def fit_one(name, seed, index, max_rows=300):
    """Fit estimator ``name`` on problem ``index`` (:func:`problem`) and classify the outcome.

    Returns
    -------
    outcome : dict
        ``flags`` (set of column names of :data:`COLUMNS`), ``N``, ``D``, ``seconds`` (wall),
        ``cpu_seconds`` (this process's CPU time, every thread) and ``message`` (the
        exception, or the warnings' first lines, for the details listing).
    """
    from sklearn.exceptions import ConvergenceWarning
    kind = kind_of(name)
    X, y, N = problem(seed, index, kind, max_rows)
    Xtr, ytr = X[:N], y[:N]
    flags, message = set(), ""
    start, cpu_start = time.perf_counter(), time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            est = make_estimator(name, index).fit(Xtr, ytr)
            out = check_outputs(est, X, ytr, kind)
        except ValueError as exc:
            flags.add("value_error")
            message = f"ValueError: {exc}"
        except Exception as exc:  # noqa: BLE001 -- every other exception is a finding
            flags.add("exception")
            message = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        else:
            flags.update(k for k in ("nonfinite", "bad_proba") if out[k])
            warned = any(issubclass(w.category, ConvergenceWarning) for w in caught)
            if warned:
                flags.add("warned")
            if out["constant"] and not warned:
                if baseline_signal(X, y, N, kind) >= SIGNAL_MARGIN:
                    flags.add("flat_silent")
    seconds = time.perf_counter() - start
    cpu_seconds = time.process_time() - cpu_start
    if not message and caught:
        message = "; ".join(sorted({f"{w.category.__name__}: {str(w.message)[:120]}"
                                    for w in caught}))
    if not flags & set(FAILURES) and "value_error" not in flags:
        flags.add("ok")
    return dict(name=name, index=index, flags=flags, N=N, D=X.shape[1], seconds=seconds,
                cpu_seconds=cpu_seconds, message=message)


# ------------------------------------------------------------------ workers with a time limit
def warm_up(names):
    """Fit each of ``names`` once on a fixed small problem, so that Numba's compilation (or
    loading its cache) is not timed as part of the first fuzzed fit."""
    X = np.random.default_rng(0).standard_normal((40, 3))
    targets = dict(binary=(X[:, 0] > 0).astype(np.int64),
                   multiclass=np.digitize(X[:, 0], [-0.5, 0.5]),
                   regression=np.sin(X[:, 0]) + X[:, 1])
    for name in names:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                make_estimator(name, 0).fit(X, targets[kind_of(name)])
            except Exception:  # noqa: BLE001 -- the fuzzed fits will report it
                pass


def _serve(conn, names):
    """A worker: warms up ``names``, says "ready", then fits (name, seed, index) tasks from
    ``conn`` until it receives None."""
    warm_up(names)
    conn.send("ready")
    while True:
        task = conn.recv()
        if task is None:
            return
        conn.send(fit_one(*task))


@contextlib.contextmanager
def _one_thread_environment():
    """:data:`THREAD_VARS` at one while a worker starts, then as they were.

    One BLAS and one Numba thread a worker: workers are the parallelism, and results do not
    depend on the thread count. A spawned worker reads them from the environment it inherits,
    before it imports numpy; the caller's own environment is restored at once, because numba
    refuses to compile in a process whose NUMBA_NUM_THREADS changes after its threads started.
    """
    saved = {var: os.environ.get(var) for var in THREAD_VARS}
    os.environ.update(dict.fromkeys(THREAD_VARS, "1"))
    try:
        yield
    finally:
        for var, value in saved.items():
            if value is None:
                os.environ.pop(var, None)
            else:
                os.environ[var] = value


class _Worker:
    """One worker process, whether it has warmed up, and the task it runs (None when idle)."""

    def __init__(self, ctx, names):
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_serve, args=(child, names), daemon=True)
        with _one_thread_environment():
            self.process.start()
        child.close()
        self.ready, self.task, self.started, self.cpu_started = False, None, 0.0, None
        self.awake, self.polled = 0.0, 0.0

    def submit(self, task):
        self.task, self.started = task, time.perf_counter()
        self.awake, self.polled = 0.0, self.started
        self.cpu_started = self.cpu_seconds()
        self.conn.send(task)

    def wall_seconds(self):
        """Wall seconds of the running task while the harness was polling: each gap between
        polls counts up to :data:`MAX_POLL_GAP`."""
        now = time.perf_counter()
        self.awake += min(now - self.polled, MAX_POLL_GAP)
        self.polled = now
        return self.awake

    def cpu_seconds(self):
        """The worker's CPU seconds so far, all threads (None where /proc cannot say)."""
        try:
            with open(f"/proc/{self.process.pid}/stat") as f:
                # the fields after the parenthesised command name; utime and stime are the
                # 14th and 15th of the whole line
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            return None

    def over(self, time_limit):
        """Whether the running task has used up ``time_limit``: CPU seconds where known, wall
        seconds otherwise, and in any case :data:`HANG_WALL_FACTOR` limits of wall time (wall
        time the harness was awake for, :meth:`wall_seconds`)."""
        wall = self.wall_seconds()
        now = self.cpu_seconds()
        if now is None or self.cpu_started is None:
            return wall > time_limit
        return now - self.cpu_started > time_limit or wall > HANG_WALL_FACTOR * time_limit

    def stop(self, kill=False):
        if kill:
            self.process.kill()
        else:
            self.conn.send(None)
        self.process.join()


def run_tasks(tasks, workers, time_limit):
    """Run ``fit_one`` over ``tasks`` in ``workers`` processes; yield each outcome as it
    arrives. A task over ``time_limit`` seconds (:meth:`_Worker.over`) is a hang: its worker is
    killed and replaced; a worker that dies mid-task gives an ``exception``."""
    ctx = multiprocessing.get_context("spawn")
    names = sorted({t[0] for t in tasks})
    pending = list(reversed(tasks))
    pool = [_Worker(ctx, names) for _ in range(max(1, min(workers, len(tasks))))]

    def lost(w, flag, seconds, message):
        # the outcome of a task whose worker is gone; w.task is (name, seed, index)
        return dict(name=w.task[0], index=w.task[2], flags={flag}, N=-1, D=-1,
                    seconds=seconds, message=message)

    try:
        while pending or any(w.task for w in pool):
            for w in pool:
                if w.ready and w.task is None and pending:
                    w.submit(pending.pop())
            busy = [w for w in pool if w.task]
            # wake at the first wall-clock limit, and at least every second to read the
            # workers' CPU clocks
            now = time.perf_counter()
            timeout = min((w.started + time_limit - now for w in busy), default=None)
            if timeout is not None:
                timeout = min(1.0, max(0.0, timeout) + 0.05)
            ready = wait([w.conn for w in pool if w.task or not w.ready], timeout=timeout)
            for i, w in enumerate(pool):
                if w.conn in ready:
                    try:
                        message = w.conn.recv()
                    except EOFError:   # the interpreter died: a crash, not a Python error
                        if w.task:
                            yield lost(w, "exception", time.perf_counter() - w.started,
                                       "worker process died")
                        pool[i] = _Worker(ctx, names)
                        continue
                    if message == "ready":
                        w.ready = True
                    else:
                        w.task = None
                        yield message
                elif w.task and w.over(time_limit):
                    yield lost(w, "hang", time_limit, f"over {time_limit:g} s")
                    w.stop(kill=True)
                    pool[i] = _Worker(ctx, names)
    finally:
        for w in pool:
            w.stop(kill=bool(w.task) or not w.ready or not w.process.is_alive())


# ------------------------------------------------------------------ the table
def tabulate(outcomes, names):
    """The table's lines: one row per estimator, each column a count, then the wall time
    (sum of its fit times, s), the longest fit (s), and the CPU time of the fits that recorded
    it with their number (``cpu s``, ``timed``).

    The workers run one thread each, so a fit's CPU seconds are what it takes alone on a quiet
    machine, whatever else shared the cores; its wall seconds include that sharing and any
    pause of the run. Results written before fits recorded CPU time count in ``fits`` but not
    in ``timed``."""
    width = max(len(n) for n in names)
    lines = [f"{'estimator':<{width}} {'fits':>5} " + " ".join(f"{c:>11}" for c in COLUMNS)
             + f" {'wall s':>8} {'max s':>7} {'cpu s':>8} {'timed':>6}"]
    for name in names:
        mine = [o for o in outcomes if o["name"] == name]
        seconds = [o["seconds"] for o in mine]
        cpu = [o["cpu_seconds"] for o in mine if o.get("cpu_seconds") is not None]
        counts = [sum(c in o["flags"] for o in mine) for c in COLUMNS]
        lines.append(f"{name:<{width}} {len(seconds):>5} " + " ".join(f"{c:>11}" for c in counts)
                     + f" {sum(seconds):>8.1f} {max(seconds, default=0.0):>7.1f}"
                     + f" {sum(cpu):>8.1f} {len(cpu):>6}")
    return lines


def read_results(path, seed):
    """Outcomes of ``seed`` already in the JSON-lines file ``path``, keyed by (estimator,
    problem index); the last line of a key wins. A cut-off last line is ignored."""
    done = {}
    if path is None or not os.path.exists(path):
        return done
    with open(path) as f:
        for line in f:
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue                      # a line cut off when a run was killed
            if rec.get("seed") == seed:
                rec["flags"] = set(rec["flags"])
                done[(rec["name"], rec["index"])] = rec
    return done


def append_result(path, seed, outcome):
    """Append one outcome to ``path`` (flushed, so a killed run loses at most this line)."""
    rec = dict(outcome, seed=seed, flags=sorted(outcome["flags"]))
    with open(path, "a") as f:
        f.write(json.dumps(rec) + "\n")
        f.flush()
        os.fsync(f.fileno())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fits", type=int, default=100, help="fits per estimator")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--estimators", default=",".join(ESTIMATORS),
                        help="comma-separated names (default: all): " + ", ".join(ESTIMATORS))
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--time-limit", type=float, default=60.0,
                        help="seconds a fit may take before it counts as a hang")
    parser.add_argument("--problem", type=int, default=None,
                        help="run only this problem index (with the details)")
    parser.add_argument("--details", action="store_true",
                        help="list every failure with its problem index and message")
    parser.add_argument("--results", default=None,
                        help="JSON-lines file: append each outcome, and skip the fits it has")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.estimators.split(",") if n.strip()]
    unknown = [n for n in names if n not in ESTIMATORS]
    if unknown:
        parser.error(f"--estimators: unknown {', '.join(unknown)}; choose from "
                     f"{', '.join(ESTIMATORS)}")
    indices = [args.problem] if args.problem is not None else range(args.fits)
    # problem-major order, so that a run stopped early (Ctrl-C) has a balanced table
    done = read_results(args.results, args.seed) if args.problem is None else {}
    outcomes = [done[(name, i)] for i in indices for name in names if (name, i) in done]
    tasks = [(name, args.seed, i) for i in indices for name in names if (name, i) not in done]
    if outcomes:
        print(f"{len(outcomes)} fits read from {args.results}; {len(tasks)} to run")
    start = time.perf_counter()
    try:
        for outcome in run_tasks(tasks, args.workers, args.time_limit):
            outcomes.append(outcome)
            if args.results is not None and args.problem is None:
                append_result(args.results, args.seed, outcome)
            if outcome["flags"] & set(FAILURES) or args.details or args.problem is not None:
                print(f"{outcome['name']} problem {outcome['index']} (N {outcome['N']}, D "
                      f"{outcome['D']}, {outcome['seconds']:.1f} s): "
                      f"{', '.join(sorted(outcome['flags']))}: {outcome['message']}",
                      flush=True)
    except KeyboardInterrupt:
        print(f"\ninterrupted after {len(outcomes)} of {len(tasks)} fits")
    print(f"\nfuzz seed {args.seed}, up to {len(indices)} fits per estimator, {args.workers} "
          f"worker(s), time limit {args.time_limit:g} s, {time.perf_counter() - start:.0f} s "
          f"in all")
    print("\n".join(tabulate(outcomes, names)))
    return 0 if not any(o["flags"] & set(FAILURES) for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
