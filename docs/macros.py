"""The docs' tables drawn from the package's own records when mkdocs builds the pages
(mkdocs-macros; a page opts in with ``render_macros: true``), so that no docs page lists
an instrument by hand."""

from contextuality.catalogue import glossary, module_map, quotes
from contextuality.configuration import schema
from contextuality.geometry import alignment_catalogue
from contextuality.measures import registry
from contextuality.transforms import fitting


def default(*path: str, format: str = "") -> str:
    """A setting's default as the schema declares it, in `format` (``default("measures",
    "confidence")``): a page states a default by looking it up, never by typing it."""
    return f"{schema.default(*path):{format}}"


def define_env(env) -> None:
    """The macros the pages call."""
    env.macro(registry.docs_table, "measures_table")
    env.macro(registry.census_outputs, "census_outputs")
    env.macro(alignment_catalogue.docs_table, "alignment_measures_table")
    env.macro(alignment_catalogue.docs_columns, "alignment_columns")
    env.macro(fitting.docs_table, "corrections_table")
    env.macro(module_map.docs_table, "module_map")
    env.macro(glossary.docs_table, "names_table")
    env.macro(default)
    for quote in (
        quotes.value,
        quotes.constant,
        quotes.bounds,
        quotes.interval,
        quotes.extreme,
        quotes.span,
        quotes.spread,
        quotes.median,
        quotes.runs,
        quotes.means,
        quotes.change,
        quotes.count,
        quotes.ratios,
        quotes.quotient,
        quotes.difference,
        quotes.shift,
        quotes.smallest_significant_rho,
    ):
        env.macro(quote)
