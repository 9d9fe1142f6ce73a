"""The alignment measures of two layers' cross-products over the rows (Kornblith et al.
2019; Nguyen et al. 2021; Williams et al. 2021), never an n × n matrix
(`contextuality.geometry.linear_cka`)."""

from __future__ import annotations

import numpy as np

from contextuality.geometry.alignment_record import AlignmentMeasure

# Where these records come in the catalogue (`contextuality.catalogue.discovery`).
ORDER = 1

MEASURES: tuple[AlignmentMeasure, ...] = (
    AlignmentMeasure(
        name="cka",
        label="linear CKA",
        caption=(
            "Linear CKA (Kornblith et al. 2019), ‖YᵀX‖²_F / (‖XᵀX‖_F ‖YᵀY‖_F), columns centered."
        ),
        of_products=lambda products: products.cka(),
        panel=False,
        corrections_panel=True,
    ),
    AlignmentMeasure(
        name="cka_debiased",
        label="debiased CKA",
        caption=(
            "Linear CKA with the unbiased HSIC estimator (Song et al. 2012; Nguyen et al. 2021)."
        ),
        of_products=lambda products: products.debiased_cka(),
    ),
    AlignmentMeasure(
        name="procrustes",
        label="Procrustes distance (rad)",
        caption=(
            "The angular orthogonal-Procrustes distance arccos ‖X̃ᵀỸ‖_* of the centered layers "
            "scaled to Frobenius norm 1 (Williams et al. 2021), radians: 0 for a rotated, scaled "
            "copy."
        ),
        distance=True,
        limits=(0.0, float(np.pi / 2)),
        of_products=lambda products: products.procrustes(),
    ),
)
