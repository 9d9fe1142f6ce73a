"""The alignment measures of two layers' cross-products over the rows (Kornblith et al.
2019; Nguyen et al. 2021; Williams et al. 2021), never an n × n matrix
(`contextuality.geometry.linear_cka`)."""

from __future__ import annotations

import numpy as np

from contextuality.geometry.alignment_record import AlignmentMeasure

MEASURES: tuple[AlignmentMeasure, ...] = (
    AlignmentMeasure(
        "cka",
        "linear CKA",
        "Linear CKA (Kornblith et al. 2019), ‖YᵀX‖²_F / (‖XᵀX‖_F ‖YᵀY‖_F), columns centered.",
        of_products=lambda products: products.cka(),
        panel=False,
    ),
    AlignmentMeasure(
        "cka_debiased",
        "debiased CKA",
        "Linear CKA with the unbiased HSIC estimator (Song et al. 2012; Nguyen et al. 2021).",
        of_products=lambda products: products.debiased_cka(),
    ),
    AlignmentMeasure(
        "procrustes",
        "Procrustes distance (rad)",
        "The angular orthogonal-Procrustes distance arccos ‖X̃ᵀỸ‖_* of the centered layers "
        "scaled to Frobenius norm 1 (Williams et al. 2021), radians: 0 for a rotated, scaled "
        "copy.",
        distance=True,
        limits=(0.0, float(np.pi / 2)),
        of_products=lambda products: products.procrustes(),
    ),
)
