"""Are the IVM's probabilities as honest as EP's? (issue 49 item 3)

Two measurements, each against its reference fitted in the same run:

* standardised ``load_digits`` (70/30 split, seed 0): the test log loss of ``IVMClassifier``
  against ``MultiClassEPClassifier``'s, both at their defaults (target: within 0.05);
* ``load_breast_cancer`` (70/30 split, seed 0): the IVM on the raw features against the IVM
  behind a ``StandardScaler``, for several ``random_state`` values (target: within 0.05).

Prints the log loss, the accuracy and the median largest probability of every fit.

    python benchmarks/ivm_calibration.py [--seeds 3]
"""
import argparse
import time

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.metrics import log_loss
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sparsegp import IVMClassifier, MultiClassEPClassifier

#: How far the IVM's log loss may lie above its reference's (issue 49's Done-when)
MARGIN = 0.05


def scored(model, Xtr, ytr, Xte, yte):
    """(log loss, accuracy, median largest probability, seconds) of ``model`` fitted on the
    training rows and scored on the test rows."""
    start = time.perf_counter()
    P = model.fit(Xtr, ytr).predict_proba(Xte)
    seconds = time.perf_counter() - start
    accuracy = np.mean(model.classes_[np.argmax(P, axis=1)] == yte)
    return log_loss(yte, P, labels=model.classes_), accuracy, np.median(P.max(axis=1)), seconds


def report(label, row):
    print(f"  {label:<34} log loss {row[0]:.4f}  accuracy {row[1]:.3f}  median max p "
          f"{row[2]:.3f}  {row[3]:.1f} s", flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3, help="random_state 0, 1, ...")
    args = parser.parse_args(argv)

    X, y = load_digits(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0)
    scaler = StandardScaler().fit(Xtr)
    Xtr, Xte = scaler.transform(Xtr), scaler.transform(Xte)
    print("standardised digits, 70/30 split (seed 0)")
    ep = scored(MultiClassEPClassifier(random_state=0), Xtr, ytr, Xte, yte)
    report("MultiClassEPClassifier", ep)
    for seed in range(args.seeds):
        ivm = scored(IVMClassifier(random_state=seed), Xtr, ytr, Xte, yte)
        report(f"IVMClassifier random_state={seed}", ivm)
        print(f"    IVM - EP: {ivm[0] - ep[0]:+.4f} (at most {MARGIN})")

    X, y = load_breast_cancer(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0)
    print("breast cancer, 70/30 split (seed 0): raw features against standardised")
    for seed in range(args.seeds):
        raw = scored(IVMClassifier(random_state=seed), Xtr, ytr, Xte, yte)
        std = scored(make_pipeline(StandardScaler(), IVMClassifier(random_state=seed)),
                     Xtr, ytr, Xte, yte)
        report(f"IVMClassifier raw, random_state={seed}", raw)
        report(f"  standardised, random_state={seed}", std)
        print(f"    raw - standardised: {raw[0] - std[0]:+.4f} (at most {MARGIN})")


if __name__ == "__main__":
    main()
