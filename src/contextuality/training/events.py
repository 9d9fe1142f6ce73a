"""When things happen in a run's early steps, per layer, read off its probes.

The end of warm-up, the first step below the unigram line, the anisotropy's peak and the
first steps past half of it and past half its rise, and the cosines with the unigram
direction there."""

from __future__ import annotations

import pandas as pd

# The columns that name a run's layer in the probe tables.
KEYS = ["run", "architecture", "seed", "warmup", "layer"]


def layer_events(rows: pd.DataFrame) -> dict[str, float]:
    """One run's layer's events (`rows`: its probes in step order); a step NaN where the
    condition never holds."""
    steps, anisotropy = rows["step"].to_numpy(float), rows["anisotropy"]
    peak = rows.loc[anisotropy.idxmax()]
    initial = anisotropy.iloc[0]

    def first_step(condition: pd.Series) -> float:
        return steps[condition.to_numpy()][0] if condition.any() else float("nan")

    return {
        "warmup_end": int(rows["warmup"].iloc[0]),
        "unigram_crossing": first_step(rows["held_out_loss"] < rows["unigram_loss"]),
        "peak_step": int(peak["step"]),
        "peak_anisotropy": peak["anisotropy"],
        "half_peak_step": first_step(anisotropy > peak["anisotropy"] / 2),
        "half_rise_step": first_step(anisotropy > (initial + peak["anisotropy"]) / 2),
        "cos_mean_unigram_at_peak": peak["cos_mean_unigram"],
        "cos_pc1_unigram_at_peak": peak["cos_pc1_unigram"],
        "cos_mean_unigram_last": rows["cos_mean_unigram"].iloc[-1],
    }


def probe_events(table: pd.DataFrame, keys: list[str] = KEYS) -> pd.DataFrame:
    """`layer_events` of every run's layer in `table` (a row per run, step and layer), a
    row per distinct value of `keys`."""
    ordered = table.sort_values([*keys, "step"], kind="stable")
    return pd.DataFrame(
        [
            {**dict(zip(keys, key, strict=True)), **layer_events(rows.reset_index(drop=True))}
            for key, rows in ordered.groupby(keys, sort=False)
        ]
    )
