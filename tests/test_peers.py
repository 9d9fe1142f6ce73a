"""The instruments against their peers' own packages, where those install from the
registry: each test skips, saying why, when its package is absent (CI installs them).

reptrix (Agrawal et al.'s α-ReQ, as `docs/instruments.md` cites it) fits the power law of
a covariance eigenspectrum; `spectra.alpha_req` must give its exponent on the same ranks.
"""

from __future__ import annotations

import numpy as np
import pytest

from contextuality.measures.isotropy import spread
from contextuality.measures.spectra import ALPHA_REQ_RANKS, alpha_req

reptrix_alpha = pytest.importorskip(
    "reptrix.alpha", reason="reptrix is not installed (pip install --no-deps reptrix==0.1.0)"
)

# reptrix's fit range is 0-based eigenvalue indices; ALPHA_REQ_RANKS are 1-based ranks.
FIT_INDICES = np.arange(ALPHA_REQ_RANKS[0] - 1, ALPHA_REQ_RANKS[1])


def _power_law_rows(n: int, d: int, exponent: float, seed: int) -> np.ndarray:
    """Rows whose covariance spectrum decays about as i^-exponent, in a random basis."""
    rng = np.random.default_rng(seed)
    scales = np.arange(1, d + 1) ** (-exponent / 2)
    basis, _ = np.linalg.qr(rng.normal(size=(d, d)))
    return (rng.normal(size=(n, d)) * scales) @ basis.T + rng.normal(size=d)


@pytest.mark.parametrize(("exponent", "seed"), [(0.7, 0), (1.0, 1), (1.6, 2)])
def test_alpha_req_is_reptrix_s_on_the_same_spectrum(exponent, seed):
    """The same weighted least squares (weights 1/i over ranks 6–100): reptrix weighs in
    float32, so the two agree to float32's precision, not float64's."""
    eigenvalues = np.sort(np.random.default_rng(seed).pareto(1 / exponent, 300))[::-1] + 1e-3
    peer = reptrix_alpha.get_powerlaw(eigenvalues / eigenvalues.sum(), FIT_INDICES.copy())[0]
    assert alpha_req(eigenvalues) == pytest.approx(peer, rel=1e-6)


@pytest.mark.parametrize(("exponent", "seed"), [(0.8, 3), (1.3, 4)])
def test_alpha_req_of_rows_is_reptrix_s_get_alpha(exponent, seed):
    """From rows: reptrix's PCA spectrum of the centered rows and this package's covariance
    eigenvalues (`isotropy.spread`) give the same exponent."""
    torch = pytest.importorskip("torch")
    rows = _power_law_rows(4000, 160, exponent, seed).astype(np.float32)
    peer = reptrix_alpha.get_alpha(torch.from_numpy(rows), fit_range=FIT_INDICES.copy())[0]
    found = alpha_req(spread(rows).eigenvalues)
    assert found == pytest.approx(peer, rel=1e-4)
    assert found == pytest.approx(exponent, rel=0.15)  # and it is the planted decay


def test_alpha_req_on_ranks_11_to_100_is_reptrix_s_default_call():
    """``measures.alpha_req_ranks: [11, 100]``: the exponent reptrix's ``get_alpha`` gives
    called without a fit range."""
    torch = pytest.importorskip("torch")
    rows = _power_law_rows(4000, 160, 1.1, 5).astype(np.float32)
    peer = reptrix_alpha.get_alpha(torch.from_numpy(rows))[0]
    assert alpha_req(spread(rows).eigenvalues, (11, 100)) == pytest.approx(peer, rel=1e-4)
    assert alpha_req(spread(rows).eigenvalues) != pytest.approx(peer, rel=1e-4)
