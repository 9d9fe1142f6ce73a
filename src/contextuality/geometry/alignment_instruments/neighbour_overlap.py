"""The alignment measures of two layers' nearest neighbours (Huh et al. 2024, platonic-rep's
definitions; `contextuality.geometry.neighbours`)."""

from __future__ import annotations

from contextuality.geometry.alignment_record import AlignmentMeasure
from contextuality.geometry.neighbours import cknna, mutual_knn

# Where these records come in the catalogue (`contextuality.catalogue.discovery`).
ORDER = 2

MEASURES: tuple[AlignmentMeasure, ...] = (
    AlignmentMeasure(
        name="mutual_knn",
        label="mutual k-NN",
        caption=(
            "The mean share of an occurrence's k nearest neighbours by cosine that are its "
            "neighbours in both layers (Huh et al. 2024)."
        ),
        of_neighbours=mutual_knn,
        corrections_panel=True,
    ),
    AlignmentMeasure(
        name="cknna",
        label="CKNNA",
        caption=(
            "CKA of the cosine kernels restricted to the pairs that are neighbours in both "
            "(Huh et al. 2024)."
        ),
        of_neighbours=cknna,
    ),
)
