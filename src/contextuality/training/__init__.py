"""Tiny GPT-2 and BERT models trained from scratch, checkpoints saved where the config
asks: does the anisotropy of contextual representations emerge with training?

Each run's tokenizer is trained on its training sentences, and its held-out loss is
measured beside a unigram model's.

`training.loop.train` trains one run (torch is imported there, not here, so that reading
the settings costs no torch import); `training.tiny` builds the models and their data.
"""

from contextuality.training.settings import (
    ARCHITECTURES,
    ProbeSettings,
    RunSettings,
    TrainingSettings,
)

__all__ = ["ARCHITECTURES", "ProbeSettings", "RunSettings", "TrainingSettings"]
