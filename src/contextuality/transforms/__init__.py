"""The transforms stage: corrections of an embedding space (isotropy fixes), fitted on a
corpus's held-out sentences and applied to the rest.

`fitting` holds the transforms themselves, arrays in and out: their settings, the split
of sentences they are fitted on, a fitted affine map. `layers` reads a layer's shards as
the measures, the static vectors and the geometry see them: as stored, or transformed.
"""
