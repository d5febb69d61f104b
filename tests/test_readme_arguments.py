"""The README's table of constructor arguments is the estimators' signatures (issue 22 item 5).

On a mismatch the message holds the table as the code has it, to paste into the README.
"""
import inspect
from pathlib import Path

import sparsegp

README = Path(__file__).resolve().parents[1] / "README.md"

#: column heading -> estimator
COLUMNS = {"EP": "EPClassifier", "GFITC": "GFITCClassifier", "IVM": "IVMClassifier",
           "MC EP/SEP": "MultiClassEPClassifier", "MC GFITC": "MultiClassGFITCClassifier",
           "MC VI": "MultiClassSVGPClassifier", "Regressor": "SparseGPRegressor",
           "Stagewise": "StagewiseGPClassifier"}


def argument_table():
    """Markdown table: argument x estimator, the shared names first, then alphabetical."""
    names = {head: set(inspect.signature(getattr(sparsegp, cls).__init__).parameters) - {"self"}
             for head, cls in COLUMNS.items()}
    arguments = sorted(set().union(*names.values()),
                       key=lambda a: (-sum(a in n for n in names.values()), a))
    lines = ["| argument | " + " | ".join(COLUMNS) + " |", "|---|" + "---|" * len(COLUMNS)]
    lines += [f"| `{a}` | " + " | ".join("✓" if a in names[h] else "" for h in COLUMNS) + " |"
              for a in arguments]
    return "\n".join(lines)


def test_every_public_estimator_is_a_column():
    assert set(COLUMNS.values()) == {n for n in sparsegp.__all__ if n[0].isupper()}


def test_readme_table_is_the_signatures():
    table = argument_table()
    assert table in README.read_text(encoding="utf-8"), f"README table should read:\n{table}"
