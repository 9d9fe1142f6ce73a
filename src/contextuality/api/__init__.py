"""The library from Python, on arrays a researcher already has. Every measure of a layer
(`measure_layer`), its intrinsic dimension over scale (`intrinsic_dimension`), the
alignment between layers and models (`alignment`), and the word rows of a model's hidden
states (`word_rows`). The workflow's steps compute with the same functions."""

from contextuality.api.geometry import LayerDimension, alignment, intrinsic_dimension
from contextuality.api.hidden_states import WordRows, word_rows
from contextuality.api.layer import measure_layer
from contextuality.corpus.index import IndexSettings
from contextuality.geometry.alignment import AlignmentResult, AlignmentSettings
from contextuality.geometry.dimension import DimensionSettings
from contextuality.geometry.settings import GeometrySettings
from contextuality.measures.settings import MeasureSettings
from contextuality.transforms.fitting import TransformSettings

__all__ = [
    "AlignmentResult",
    "AlignmentSettings",
    "DimensionSettings",
    "GeometrySettings",
    "IndexSettings",
    "LayerDimension",
    "MeasureSettings",
    "TransformSettings",
    "WordRows",
    "alignment",
    "intrinsic_dimension",
    "measure_layer",
    "word_rows",
]
