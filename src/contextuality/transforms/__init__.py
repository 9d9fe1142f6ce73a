"""The transforms stage: what the vectors are measured under, as stored (``none``) or
under a correction of the space, fitted on a corpus's held-out sentences and applied to
the rest.

`fitting` holds the transforms themselves, arrays in and out: the corrections' records
(found in `corrections`, each a `record.Correction`), their settings, the split of
sentences they are fitted on, a fitted affine map (`affine`). `layers` reads a layer's
shards as the measures, the static vectors and the geometry see them: as stored, or
corrected.
"""
