"""No stationary-kernel distance or gradient contraction outside the kernel layer (issue 48).

The kernel layer is :data:`KERNEL_LAYER`: the kernel objects, the covariance operations over
plain arrays (``sparsegp._covariance``) and the compiled family switch
(``sparsegp._numba.covfuncs``). Every other module of ``sparsegp/`` asks it for covariances
and gradients; this test reads their source with ``ast`` and fails on any of the shapes a
distance or a contraction takes in this code base:

* ``primitive``: a use of the switch's scalar or flat-array leaves (``unit_kg``,
  ``stationary_value``, ``stationary_from_sqdist``, ``stationary_from_iso_sqdist``,
  ``scaled_sqdist``), or of a distance routine (``cdist``, ``pdist``,
  ``euclidean_distances``): whoever calls them has formed the distance itself;
* ``squared difference``: an element difference of arrays (a subtraction with a subscript on
  either side, possibly divided or multiplied by a length-scale) multiplied by itself, directly
  (``u * u``, ``u ** 2``) or through a name built from it (``g = p * u`` then ``g * u``, the
  length-scale term of a contraction);
* ``broadcast difference``: ``A[:, None, :] - B[None, :, :]``, all pairs at once;
* ``gemm distance``: a matrix product scaled by ±2 (``-2.0 * (A @ B.T)``, ``d2 *= -2.0``
  after ``d2 = A @ b``), the cross term of |a|² + |b|² − 2 a·b;
* ``gemm contraction``: ``2.0 * np.einsum(...)`` of a product with the inputs, the cross term
  of the GEMM form of the length-scale gradient;
* ``family branch``: a comparison with a family code (``family == SE``): what a family
  implies (SE is its own derivative factor, the GEMM form is for SE only) is the kernel
  layer's to know (``_covariance.deriv_is_value``);
* ``distance contraction``: formed squared distances (the house names ``d2``, ``d2_*``,
  ``sqdist``) multiplied into a sum, as the length-scale gradient over cached distances is;
* ``variance term``: an adjoint summed against a covariance (a name or attribute ``K``,
  ``K_*``, ``Kuu``, ``Kfu_s``...: a capital K followed by lower case or an underscore) into
  one number: ``np.sum(W * K)``, ``(W * K).sum()``, ``np.vdot(W, K)``, ``np.einsum("ij,ij->",
  W, K)``, or a compiled ``s += W[i, m] * K[i, m]``. That is d/dlog s² of Σ W ⊙ K for every
  family (``_covariance.variance_gradient``, or ``variance_gradient_rows`` in a compiled pass).

:func:`find` is tested on planted cases below, so a rule that stops seeing its shape fails.
"""
import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "sparsegp"

#: the kernel layer (paths under sparsegp/): the only modules that may form distances.
#: kernels.py is the public door of the kernel objects; their code is in _kernel_objects.py
#: (the classes) and _kernel_spec.py (a kernel argument read for an engine), split from it
KERNEL_LAYER = {"kernels.py", "_kernel_objects.py", "_kernel_spec.py", "_covariance.py",
                "_numba/covfuncs.py"}

FAMILY_CODES = {"SE", "MATERN12", "MATERN32", "MATERN52"}

PRIMITIVES = {"unit_kg", "stationary_value", "stationary_from_sqdist",
              "stationary_from_iso_sqdist", "scaled_sqdist", "cdist", "pdist",
              "euclidean_distances"}


def _names(node):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _is_elem_diff(node, elems=frozenset()):
    """A difference of two array elements (optionally scaled): each side a subscript or a
    name that holds one (``elems``), at least one a subscript."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Div, ast.Mult)):
        return _is_elem_diff(node.left, elems) or _is_elem_diff(node.right, elems)
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub)):
        return False
    sides = (node.left, node.right)
    return (any(isinstance(s, ast.Subscript) for s in sides)
            and all(isinstance(s, ast.Subscript) or (isinstance(s, ast.Name) and s.id in elems)
                    for s in sides))


def _mult_operands(node):
    """The factors of a chain of ``*`` (and ``/``, whose divisor is a factor too)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)):
        return _mult_operands(node.left) + _mult_operands(node.right)
    return [node]


def _has_none_index(sub):
    return any(isinstance(n, ast.Constant) and n.value is None for n in ast.walk(sub.slice))


def _is_product(node):
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
        return True
    return (isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name))
            and getattr(node.func, "attr", getattr(node.func, "id", None)) in
            ("matmul", "dot", "einsum"))


def _is_distance(node):
    """The house names of formed squared distances: ``d2``, ``d2_cu``, ``sqdist[0]``."""
    if isinstance(node, ast.Subscript):
        node = node.value
    return isinstance(node, ast.Name) and (node.id == "d2" or node.id.startswith("d2_")
                                           or node.id == "sqdist")


def _is_covariance(node):
    """A covariance by the house names: ``K``, ``K_se``, ``Kuu``, ``Ks``, ``prior.Kfu_s``,
    ``K[i, m]`` (a capital K, then nothing, lower case or an underscore)."""
    if isinstance(node, ast.Subscript):
        node = node.value
    name = getattr(node, "id", getattr(node, "attr", None))
    return (isinstance(name, str) and name.startswith("K")
            and (len(name) == 1 or name[1].islower() or name[1] == "_"))


def _is_variance_term(node):
    """One number summed from an adjoint and a covariance (see the module docstring)."""
    if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add):
        ops = _mult_operands(node.value)
        return (isinstance(node.value, ast.BinOp) and isinstance(node.value.op, ast.Mult)
                and len(ops) == 2 and all(isinstance(o, ast.Subscript) for o in ops)
                and any(_is_covariance(o) for o in ops))
    if not isinstance(node, ast.Call) or node.keywords:
        return False
    func = getattr(node.func, "attr", getattr(node.func, "id", None))
    args = list(node.args)
    if func == "sum" and not args and isinstance(node.func, ast.Attribute):
        args = [node.func.value]                           # (W * K).sum()
    elif func == "sum" and len(args) == 1:
        pass                                               # np.sum(W * K)
    elif func == "vdot" and len(args) == 2:
        return any(_is_covariance(a) for a in args)
    elif func == "einsum" and args and isinstance(args[0], ast.Constant) and \
            str(args[0].value).replace(" ", "").endswith("->"):
        return any(_is_covariance(a) for a in args[1:])
    else:
        return False
    prod = args[0]
    return (isinstance(prod, ast.BinOp) and isinstance(prod.op, ast.Mult)
            and len(_mult_operands(prod)) == 2 and any(_is_covariance(o) for o in
                                                        _mult_operands(prod)))


def _is_two(node):
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return isinstance(node, ast.Constant) and node.value in (2, 2.0)


def _function_findings(fn):
    out = []
    diffs = set()          # names holding an element difference
    carriers = {}          # names holding a product with a difference name: name -> diff names
    products = set()       # names holding a matrix product
    elems = {t.id for node in ast.walk(fn) if isinstance(node, ast.Assign)
             and isinstance(node.value, ast.Subscript) for t in node.targets
             if isinstance(t, ast.Name)}
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name):
            name, value = node.targets[0].id, node.value
            if _is_elem_diff(value, elems):
                diffs.add(name)
            if _is_product(value):
                products.add(name)
        if isinstance(node, ast.Call) and _is_product(node):
            products |= {k.value.id for k in node.keywords
                         if k.arg == "out" and isinstance(k.value, ast.Name)}
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name):
            used = {o.id for o in _mult_operands(node.value) if isinstance(o, ast.Name)}
            if used & diffs and len(_mult_operands(node.value)) > 1:
                carriers[node.targets[0].id] = used & diffs
    for node in ast.walk(fn):
        line = getattr(node, "lineno", None)
        if (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult)
                and any(_is_distance(o) for o in _mult_operands(node))) or \
                (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "einsum"
                 and any(_is_distance(a) for a in node.args)):
            out.append((line, "distance contraction"))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            ops = _mult_operands(node)
            names = [o.id for o in ops if isinstance(o, ast.Name)]
            seen = set()
            for n in names:
                if n in diffs and (n in seen or any(n in carriers.get(m, ()) for m in names)):
                    out.append((line, "squared difference"))
                    break
                seen.add(n)
            if sum(_is_elem_diff(o, elems) for o in ops) >= 2:
                out.append((line, "squared difference"))
            if len(ops) == 2 and _is_two(ops[0]) and _is_product(ops[1]):
                func = getattr(ops[1], "func", None)
                kind = ("gemm contraction" if getattr(func, "attr", None) == "einsum"
                        else "gemm distance")
                out.append((line, kind))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow) and \
                _is_two(node.right) and (_is_elem_diff(node.left, elems) or
                                         (isinstance(node.left, ast.Name)
                                          and node.left.id in diffs)):
            out.append((line, "squared difference"))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub) and \
                all(isinstance(s, ast.Subscript) and isinstance(s.value, ast.Name)
                    and _has_none_index(s) for s in (node.left, node.right)):
            out.append((line, "broadcast difference"))
        if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Mult) and \
                _is_two(node.value) and isinstance(node.target, ast.Name) and \
                node.target.id in products:
            out.append((line, "gemm distance"))
        if _is_variance_term(node):
            out.append((line, "variance term"))
    return out


def find(source):
    """``[(line, rule)]`` of the distances and contractions in ``source`` (a module's text)."""
    tree = ast.parse(source)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in PRIMITIVES:
            out.append((node.lineno, "primitive"))
        elif isinstance(node, ast.Attribute) and node.attr in PRIMITIVES:
            out.append((node.lineno, "primitive"))
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                if a.name in PRIMITIVES:
                    out.append((node.lineno, "primitive"))
        if isinstance(node, ast.Compare):
            for side in [node.left, *node.comparators]:
                if getattr(side, "id", getattr(side, "attr", None)) in FAMILY_CODES:
                    out.append((node.lineno, "family branch"))
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.extend(_function_findings(fn))
    return sorted(set(out))


#: distances outside the kernel layer that are no covariance, each with its reason; the
#: list only shrinks (an entry the check no longer finds fails)
ALLOWED = {
    # the experiment grid's length-scale start: the square root of the median pairwise
    # distance of training rows, a statistic of the data that no kernel evaluates
    ("experiments/grid.py", "broadcast difference"),
    ("experiments/grid.py", "squared difference"),
}


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel not in KERNEL_LAYER:
            yield rel, path


def test_no_distance_or_contraction_outside_the_kernel_layer():
    found = {}
    for rel, path in _modules():
        for line, rule in find(path.read_text(encoding="utf-8")):
            found.setdefault((rel, rule), []).append(line)
    assert sorted(set(found) - ALLOWED) == [], {k: found[k] for k in set(found) - ALLOWED}
    assert sorted(ALLOWED - set(found)) == []


def test_the_kernel_layer_is_where_they_are():
    """The rules see the forms where they live (a rule that sees nothing anywhere is dead)."""
    rules = set()
    for rel in KERNEL_LAYER:
        rules |= {r for _, r in find((PACKAGE / rel).read_text(encoding="utf-8"))}
    assert rules == {"primitive", "squared difference", "broadcast difference",
                     "gemm distance", "gemm contraction", "distance contraction",
                     "family branch", "variance term"}


PLANTED = {
    "primitive": "from ._numba.covfuncs import stationary_value\n",
    "primitive (attribute)": "def f(X, Z):\n    return _cf.stationary_from_sqdist(X, 0, 1.0, Z)\n",
    "primitive (cdist)": "def f(A, B):\n    return cdist(A, B, 'sqeuclidean')\n",
    "squared difference": ("def f(X, a, b, inv_ls):\n    s = 0.0\n"
                           "    for t in range(X.shape[1]):\n"
                           "        u = (X[a, t] - X[b, t]) * inv_ls[t]\n"
                           "        s += u * u\n    return s\n"),
    "squared difference (carrier)": ("def f(X, Z, W, G, inv_l2, g_ls):\n"
                                     "    for n in range(3):\n        for j in range(2):\n"
                                     "            diff = X[n, j] - Z[0, j]\n"
                                     "            g = W[n, 0] * G[n, 0] * diff * inv_l2[j]\n"
                                     "            g_ls[j] += g * diff\n"),
    "squared difference (inline)": ("def f(X, i, j, d, gls, pw):\n"
                                    "    gls[d] += pw * (X[i, d] - X[j, d]) * "
                                    "(X[i, d] - X[j, d])\n"),
    "squared difference (pow)": "def f(x, z, l):\n    return ((x[0] - z[0]) / l) ** 2\n",
    "broadcast difference": ("def f(X, Z, l):\n"
                             "    diff = (X[:, None, :] - Z[None, :, :]) / l\n"
                             "    return diff\n"),
    "gemm distance": ("def f(Xs, Zs, x2, z2):\n"
                      "    return x2[:, None] + z2[None, :] - 2.0 * (Xs @ Zs.T)\n"),
    "gemm distance (in place)": ("def f(Xs, i, sq):\n    d2 = Xs @ Xs[i]\n    d2 *= -2.0\n"
                                 "    d2 += sq\n    return d2\n"),
    "gemm distance (out=)": ("def f(Xs, idx, rows, sq):\n"
                             "    np.matmul(Xs[idx], Xs.T, out=rows)\n    rows *= -2.0\n"),
    "distance contraction": ("def f(G, F, d2, g, w):\n    s = 0.0\n"
                             "    for i in range(3):\n"
                             "        s += g[i] * w[i] * F[i, 0] * d2[i, 0]\n    return s\n"),
    "distance contraction (einsum)": ("def f(G_uu, Fuu, sqdist):\n"
                                      "    return np.einsum('ij,ij,ij->', G_uu, Fuu, "
                                      "sqdist[1])\n"),
    "family branch": "def f(K, family):\n    return K if family == SE else None\n",
    "family branch (attribute)": ("def f(prior):\n    if prior.family != _cf.SE:\n"
                                  "        return 1\n"),
    "gemm contraction": ("def f(row, X, GtX, Z, col):\n"
                         "    return row @ (X * X) - 2.0 * np.einsum('md,md->d', GtX, Z)\n"),
    "variance term": ("def f(W, K, variance):\n"
                      "    return float(np.sum(W * K)) / variance\n"),
    "variance term (attribute)": ("def f(G_uu, prior, wk):\n"
                                  "    return wk + float(np.sum(G_uu * prior.Kzz_s))\n"),
    "variance term (method)": "def f(W, K_se):\n    return (K_se * W).sum()\n",
    "variance term (vdot)": "def f(G_uu, Kuu):\n    return np.vdot(G_uu, Kuu)\n",
    "variance term (einsum)": ("def f(G_cu, Kcu):\n"
                               "    return np.einsum('ij,ij->', G_cu, Kcu)\n"),
    "variance term (compiled)": ("def f(Hb, K, b_lo, nb, M):\n    s = 0.0\n"
                                 "    for i in range(nb):\n        for m in range(M):\n"
                                 "            s += Hb[i, m] * K[b_lo + i, m]\n"
                                 "    return s\n"),
}


@pytest.mark.parametrize("case", sorted(PLANTED))
def test_the_check_catches_a_planted_case(case):
    hits = find(PLANTED[case])
    assert hits, case
    assert case.split(" (")[0] in {r for _, r in hits}


BENIGN = {
    "residual": "def f(y, mu, r):\n    for i in range(3):\n        r[i] = y[i] - mu[i]\n",
    "norm of a block": "def f(V):\n    return np.einsum('ij,ij->j', V, V)\n",
    "doubled product": "def f(A, B):\n    return 0.5 * (A @ B + (A @ B).T)\n",
    "square of a scalar": "def f(a, b):\n    d = a - b\n    return d * d\n",
    "sum of a product of no covariance": "def f(W, V):\n    return np.sum(W * V)\n",
    "row sums against a covariance": "def f(W, K):\n    return np.sum(W * K, axis=1)\n",
    "a constant's name": "def f(w):\n    return np.sum(w * KAPPA)\n",
    "a covariance column in a product": ("def f(kt, v, s):\n    for i in range(3):\n"
                                         "        s += kt[i] * v[i]\n    return s\n"),
    "a covariance times a scalar, summed": ("def f(Kuu, c):\n    s = 0.0\n"
                                           "    s += c * Kuu[0, 0] * 2.0\n    return s\n"),
}


@pytest.mark.parametrize("case", sorted(BENIGN))
def test_the_check_passes_what_is_no_distance(case):
    assert find(BENIGN[case]) == []
