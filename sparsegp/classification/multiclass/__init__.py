"""Multi-class GP classification (Villacampa-Calvo & Hernández-Lobato 2017, seed 002).

Three estimators over shared pieces; the modules without an underscore are the engine's
public interface, used by the estimators, by :mod:`sparsegp.distributed` and by the tests:

``kernel``      per-class covariances K_c, K_fu, kappa_c, their gradients, packing of the
                hyper-parameters (ClassParams, the one parameter vector of all three),
                triangular solves; the baselines' ClassKernel
``likelihood``  the exact likelihood's factor counts and predictive class probabilities
``rows``        training data: the labels' check, row-sliceable inputs, minibatches
``engine``      EP/SEP with the pairwise-probit factors kept in u-space: the factor pass,
                refinements, the evidence, and :class:`~.engine.LocalRows`, the rows of a
                fit held in this process; over
``ep_state``    its state: prior K_c, the rows' data terms, Gaussians, the sites
                (EPState) and their u-space totals
``ep_gradient`` the gradient of log Z_EP: the rows' part, the K_c part, the moment mismatch
``gfitc_ep``    GFITC's EP on the exact likelihood, u marginalised: the FITC pieces, the
                sequential and parallel schedules, evidence, gradient, predictions
``_base``       the estimators' base class (validation, start, ``theta_``, predictions)
``_ep``         :class:`MultiClassEPClassifier` (EP / SEP, batch or minibatch, or on Dask)
``_gfitc``      :class:`MultiClassGFITCClassifier` (GFITC baseline, over ``gfitc_ep``)
``_svgp``       :class:`MultiClassSVGPClassifier` (variational baseline)

The estimators are exported by :mod:`sparsegp.classification` (and :mod:`sparsegp`).
"""
