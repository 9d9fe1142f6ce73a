"""Extraction on a GPU against the CPU: the same vectors within each forward dtype's
tolerance, the precision and storage recorded, a float16 overflow run again in float32, and
a batch too large for the device split. Every test is marked ``cuda``.

The device under test is CONTEXTUALITY_TEST_DEVICE (default ``cuda``); where it is not
available every test skips and says so. With CONTEXTUALITY_TEST_DEVICE=cpu they run on the
CPU, as CI runs them without a GPU (bench/gpu/acceptance.py): there a forward pass has no
autocast, so the comparisons are exact, and the tests that need CUDA skip.

Tolerances: the largest relative error over the rows of every layer,
‖device − cpu‖ / ‖cpu‖ (pooled vectors are not normalised, so an absolute bound would
mean something else for each row and model); a wrong row, layer or pooling gives errors
of order 1, far above every bound.

- float32: 1e-5. Only the order of summation differs (unit roundoff 6e-8), through two
  blocks of 32 dimensions.
- float16: 2e-2. Its unit roundoff is 2^-11 ≈ 4.9e-4. A transformer's weights are held
  in float16 on the GPU and every operation rounds to it (layer norms and softmax
  accumulate in float32 inside their kernels); ELMo runs under autocast, which rounds the
  inputs and outputs of each matrix product. Under CPU autocast on this corpus the median
  row is off by about that and the worst by 4e-3 (ELMo, whose recurrence carries the
  rounding along the sentence): a margin of five for the GPU's kernels, which round in
  other places.
- bfloat16: 5e-2. Its unit roundoff is 2^-8 ≈ 3.9e-3, eight times float16's; the worst
  row under CPU autocast was 1.5e-2 (ELMo again), so a margin of three.
- ELMo's character convolutions run in TF32 under float32 on CUDA (PyTorch's default for
  cuDNN convolutions, ``torch.backends.cudnn.conv.fp32_precision``), whose significand is
  float16's: its float32 bound there is float16's.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pytest
import torch

from contextuality.backends import load_model
from contextuality.backends.settings import ModelSettings
from contextuality.extraction.forward import FLOAT16_MAX
from contextuality.extraction.partitions import plan_extraction
from contextuality.extraction.run import extract
from contextuality.extraction.units import sentence_units

from conftest import TRAINING_SENTENCES
from extraction import with_spec

pytestmark = pytest.mark.cuda

DEVICE = os.environ.get("CONTEXTUALITY_TEST_DEVICE", "cuda")
TOLERANCE = {"float32": 1e-5, "float16": 2e-2, "bfloat16": 5e-2}
LONG = (
    "Bushfires forced hundreds of residents to leave their homes while the quick brown fox "
    "watched the river bank flood, and the bank raised interest rates again."
)
SENTENCES = [
    *TRAINING_SENTENCES,
    "Dogs ran.",
    "The lazy cat slept all day in the warm sun.",
    "Residents of the park watched the fox.",
    "Rates rose.",
    "Hundreds voted, and hundreds more stayed home.",
    "Why did the quick dog jump over the mat?",
    "The river flooded the park and the homes beside it.",
    "A brown fox, a lazy dog and a cat.",
    "Interest in the bank grew after the vote.",
    "It is true.",
    "The résidents' café served a naïve fox.",
    "Over 2,000 people left their homes on Tuesday.",
    "The cat, the dog and the fox sat together.",
    "Is the bank open?",
    "They watched the river rise for hours.",
    "The quick brown dogs jumped; the lazy cats did not.",
    "Fires forced the people to leave.",
    "A mat.",
    "The park is on the river bank.",
    "Hundreds of foxes ran through the park at night!",
    "The vote was true, and the rates were raised.",
    "Homes flooded.",
    "Did the cat sit on the mat or on the dog?",
    "The bank's interest rates rose by 1.5 percent.",
    LONG,
    LONG + " The fox jumps.",
]
SMALL_BATCHES = 256  # tokens: a few padded batches of mixed lengths
GPU_ONLY_AUTOCAST = "half-precision passes run on CUDA only: a CPU forward pass is float32"


def _available(device: str) -> bool:
    try:
        torch.empty(1, device=device)
    except (RuntimeError, AssertionError):  # no such device, or torch built without it
        return False
    return True


@pytest.fixture(scope="module")
def device() -> torch.device:
    """The device under test, or a skip saying why there is none."""
    if not _available(DEVICE):
        pytest.skip(
            f"CONTEXTUALITY_TEST_DEVICE={DEVICE} is not available here "
            "(CONTEXTUALITY_TEST_DEVICE=cpu runs these tests on the CPU)"
        )
    return torch.device(DEVICE)


@pytest.fixture(scope="module")
def specs(tiny_bert_dir, tiny_gpt2_dir, tiny_elmo_dir) -> dict[str, ModelSettings]:
    return {
        "bert": ModelSettings(name="tiny-bert", source=str(tiny_bert_dir)),
        "gpt2": ModelSettings(name="tiny-gpt2", source=str(tiny_gpt2_dir)),
        "elmo": ModelSettings(name="tiny-elmo", source=str(tiny_elmo_dir), loader="elmo"),
    }


class _MemorySink:
    """Keeps an extraction's vectors in memory (a `run.Sink`), as `dtype`."""

    def __init__(self, layers: tuple[int, ...], n_rows: int, dim: int, dtype: str) -> None:
        self.layers = list(layers)
        self.dtype = dtype
        self.bytes_to_write = 0
        self.vectors = np.full((len(layers), n_rows, dim), np.nan, dtype=dtype)

    def write(self, first_row: int, vectors: np.ndarray) -> None:
        self.vectors[:, first_row : first_row + vectors.shape[1]] = vectors

    def commit(self, attributes: dict) -> None:
        pass

    def abort(self) -> None:
        pass

    def __enter__(self) -> _MemorySink:
        return self

    def __exit__(self, kind, value, traceback) -> None:
        pass


def _extract(loaded, sentences=SENTENCES, **spec_changes):
    """Every layer of `loaded` for `sentences` through `run.extract` into memory, with the
    model spec's fields in `spec_changes` changed (`with_spec`; storage_dtype float32
    unless given). Returns the report and the (layers, units, dim) vectors as stored."""
    loaded = with_spec(loaded, **{"storage_dtype": "float32", **spec_changes})
    units = sentence_units(loaded, sentences)
    layers = tuple(range(loaded.n_layers + 1))
    plan = plan_extraction(loaded, units.counts, layers, 0, 1)
    sinks = []

    def open_sink(dtype: str) -> _MemorySink:
        sinks.append(_MemorySink(layers, plan.n_rows, loaded.hidden_size, dtype))
        return sinks[-1]

    report = extract(loaded, units, plan, open_sink, progress=False, seed=0)
    return report, sinks[-1].vectors


def _relative_error(vectors: np.ndarray, expected: np.ndarray) -> float:
    """The largest ‖vectors − expected‖ / ‖expected‖ over the rows of every layer, once
    both are checked to have vectors, all finite, for the same rows."""
    missing = np.isnan(expected).all(axis=-1)
    assert np.array_equal(np.isnan(vectors).all(axis=-1), missing)
    found, wanted = vectors[~missing].astype(np.float64), expected[~missing].astype(np.float64)
    assert np.isfinite(found).all() and np.isfinite(wanted).all()
    return float((np.linalg.norm(found - wanted, axis=-1) / np.linalg.norm(wanted, axis=-1)).max())


def _tolerance(name: str, dtype: str, device: torch.device) -> float:
    """The bound on `_relative_error` for model `name` run in `dtype` on `device`."""
    tf32_convolutions = torch.backends.cudnn.conv.fp32_precision == "tf32"
    if dtype == "float32" and name == "elmo" and device.type == "cuda" and tf32_convolutions:
        return TOLERANCE["float16"]
    return TOLERANCE[dtype]


@pytest.fixture(scope="module")
def on_cpu(specs) -> dict[str, object]:
    return {name: load_model(spec) for name, spec in specs.items()}


@pytest.fixture(scope="module")
def on_device(specs, device):
    """The model `name` loaded on the device for a forward pass in `dtype` (a transformer's
    weights are held in it there), each loaded once."""
    loaded = {}

    def model(name: str, dtype: str = "float16"):
        if (name, dtype) not in loaded:
            spec = dataclasses.replace(specs[name], cuda_dtype=dtype)
            loaded[name, dtype] = load_model(spec, str(device))
        return loaded[name, dtype]

    return model


@pytest.fixture(scope="module")
def expected(on_cpu) -> dict[str, np.ndarray]:
    """Each model's vectors extracted on the CPU, in float32."""
    return {
        name: _extract(loaded, token_budget=SMALL_BATCHES)[1] for name, loaded in on_cpu.items()
    }


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("name", ["bert", "gpt2", "elmo"])
def test_vectors_on_the_device_are_the_cpu_s(name, dtype, on_device, expected, device):
    report, vectors = _extract(on_device(name, dtype), token_budget=SMALL_BATCHES)
    assert report.n_batches > 2  # of padded inputs
    assert report.batches_rerun_in_float32 == 0
    assert _relative_error(vectors, expected[name]) <= _tolerance(name, dtype, device)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_the_report_records_the_device_and_the_precision(dtype, on_device, device):
    loaded = on_device("bert", dtype)
    report, _ = _extract(loaded, storage_dtype="auto")
    recorded = report.as_dict()
    assert recorded["device"] == str(next(loaded.model.parameters()).device)
    assert recorded["device"].split(":")[0] == device.type
    assert recorded["forward_dtype"] == (dtype if device.type == "cuda" else "float32")
    assert recorded["autocast"] is False
    on_gpu = dtype if device.type == "cuda" else "float32"
    assert str(next(loaded.model.parameters()).dtype) == f"torch.{on_gpu}"
    assert recorded["storage_dtype"] == "float16"
    assert recorded["stored_float32_after_overflow"] is False
    assert recorded["batches_rerun_in_float32"] == 0


def _scaled(spec: ModelSettings, device: torch.device, parameter: str, factor: float):
    """The model of `spec` on `device` with one parameter multiplied by `factor`."""
    loaded = load_model(spec, str(device))
    with torch.no_grad():
        loaded.model.get_parameter(parameter).mul_(factor)
    return loaded


# Scaled by 1e6, the first block's feed-forward layer makes values of about 1e5 from every
# token: beyond float16's 65,504, so every float16 pass overflows, while in float32 the next
# layer norm brings them back to the usual scale. Its weights (|w| up to 0.1) would not fit
# float16 scaled so, so this runs under autocast, the weights kept in float32.
OVERFLOWING = "encoder.layer.0.intermediate.dense.weight"
# Scaled by 3e4, the first attention block's layer norm (weights about 1 ± 0.6) stays
# within float16 and gives values up to about 1e5 from every token; in float32 the block's
# output norm brings them back. Weights held in float16 overflow there.
OVERFLOWING_NORM = "encoder.layer.0.attention.output.LayerNorm.weight"


@pytest.mark.parametrize(
    ("autocast", "parameter", "factor"),
    [(True, OVERFLOWING, 1e6), (False, OVERFLOWING_NORM, 3e4)],
)
def test_a_float16_overflow_is_run_again_in_float32(specs, device, autocast, parameter, factor):
    """Under autocast, and with the weights held in float16 (widened to float32 for the
    batch run again, then back to their float16 values, bit for bit)."""
    if device.type != "cuda":
        pytest.skip(GPU_ONLY_AUTOCAST)
    spec = dataclasses.replace(specs["bert"], autocast=autocast)
    _, expected = _extract(_scaled(spec, torch.device("cpu"), parameter, factor))
    loaded = _scaled(spec, device, parameter, factor)
    held = {name: value.clone() for name, value in loaded.model.state_dict().items()}
    report, vectors = _extract(loaded)
    assert report.forward_dtype == "float16" and report.autocast is autocast
    assert report.batches_rerun_in_float32 > 0
    assert report.as_dict()["batches_rerun_in_float32"] == report.batches_rerun_in_float32
    assert _relative_error(vectors, expected) <= TOLERANCE["float16"]
    for name, value in loaded.model.state_dict().items():
        assert value.dtype == held[name].dtype and torch.equal(value, held[name])


# Scaled by 1e5, the last block's layer norm gives the last layer values beyond float16's
# range; nothing after it computes with them.
LAST_NORM = "encoder.layer.1.output.LayerNorm.weight"


def test_values_beyond_float16_are_stored_as_float32_and_recorded(specs, device):
    spec = dataclasses.replace(specs["bert"], cuda_dtype="float32")
    _, expected = _extract(_scaled(spec, torch.device("cpu"), LAST_NORM, 1e5))
    loaded = _scaled(spec, device, LAST_NORM, 1e5)
    report, vectors = _extract(loaded, storage_dtype="auto")
    assert vectors.dtype == np.float32 and np.nanmax(np.abs(vectors)) > FLOAT16_MAX
    recorded = report.as_dict()
    assert recorded["storage_dtype"] == "float32"
    assert recorded["stored_float32_after_overflow"] is True
    assert _relative_error(vectors, expected) <= TOLERANCE["float32"]


def test_a_batch_too_large_for_the_device_is_split(on_device, device):
    """With the process's GPU memory capped at 128 MiB above what it holds (room for the
    segment's vectors, assembled on the device), one batch of every input (8,000 inputs
    padded to 64 tokens, gigabytes of activations) runs out; the budget is halved until
    batches fit, and the vectors are those of small batches."""
    if device.type != "cuda":
        pytest.skip(
            "needs a CUDA device's memory to run out; on the CPU "
            "test_extraction_robustness.py simulates it"
        )
    loaded = on_device("bert", "float32")
    sentences = SENTENCES * 250
    _, expected = _extract(loaded, sentences, token_budget=4096)
    torch.cuda.empty_cache()
    # The memory fraction is set per device index; "cuda" alone names the current one.
    index = torch.cuda.current_device() if device.index is None else device.index
    total = torch.cuda.get_device_properties(index).total_memory
    capped = (torch.cuda.memory_reserved(index) + 128 * 2**20) / total
    torch.cuda.set_per_process_memory_fraction(capped, index)
    try:
        report, vectors = _extract(loaded, sentences, token_budget=2**24)
    finally:
        torch.cuda.set_per_process_memory_fraction(1.0, index)
    assert report.out_of_memory_retries >= 1 and report.n_batches > 1
    assert _relative_error(vectors, expected) <= TOLERANCE["float32"]


def test_shards_written_from_the_device_are_verified_on_reading(on_device, device, tmp_path):
    """Segments of 3,000 words, assembled on the device and checksummed there, written into
    shards of 8,192-row chunks (whole chunks past HDF5's filter where a GPU computed their
    checksums): every shard reads back, HDF5 verifying each chunk, with the vectors of an
    extraction into memory."""
    from contextuality.storage.shards import ShardSetWriter, load_shard

    loaded = with_spec(on_device("bert", "float32"), segment_words=3000)
    sentences = SENTENCES * 60
    units = sentence_units(loaded, sentences)
    layers = tuple(range(loaded.n_layers + 1))
    plan = plan_extraction(loaded, units.counts, layers, 0, 1)
    assert len(plan.segments) > 3 and plan.n_rows > 2 * 8192
    paths = {layer: tmp_path / f"layer_{layer}.h5" for layer in layers}

    def open_sink(dtype: str) -> ShardSetWriter:
        return ShardSetWriter(paths, plan.n_rows, loaded.hidden_size, dtype, {"model": "m"})

    extract(loaded, units, plan, open_sink, progress=False, seed=0)
    _, expected = _extract(loaded, sentences, storage_dtype="float16")
    for position, layer in enumerate(layers):
        vectors, _ = load_shard(paths[layer], None, plan.n_rows)
        # the same batches; a GPU's pooling adds in any order, so a last bit may differ
        stored = expected[position].astype(np.float32)
        assert _relative_error(vectors[None], stored[None]) <= 2**-10


def _stream_into(loaded, sentences, vectors, device_name, directory):
    """`vectors` (layers, rows, dim; None: extracted here) summed by an accumulator on
    `device_name`, in the extraction's segments of 3,000 words; its states by layer."""
    from contextuality.corpus.words import word_spans
    from contextuality.streaming.accumulate import StreamingAccumulator
    from contextuality.streaming.state import StreamingSettings, load_state

    units = sentence_units(loaded, sentences)
    layers = tuple(range(loaded.n_layers + 1))
    plan = plan_extraction(loaded, units.counts, layers, 0, 1)
    vocabulary: dict[str, int] = {}
    word_id = np.array(
        [
            vocabulary.setdefault(sentence[start:end], len(vocabulary))
            for sentence, spans in zip(sentences, word_spans(sentences), strict=True)
            for start, end in spans
        ]
    )
    sentence_id = np.repeat(np.arange(len(sentences)), units.counts)
    paths = {layer: directory / f"layer_{layer}.state.h5" for layer in layers}

    def open_sink(dtype: str) -> StreamingAccumulator:
        return StreamingAccumulator(
            paths, word_id, sentence_id, loaded.hidden_size, {"model": "m"},
            StreamingSettings(word_sample_size=50), dtype=dtype, device=device_name,
        )  # fmt: skip

    if vectors is None:
        extract(loaded, units, plan, open_sink, progress=False, seed=0)
    else:
        with open_sink("float16") as sink:
            for start, end in plan.segments:
                first, last = int(plan.row_offsets[start]), int(plan.row_offsets[end])
                part = torch.as_tensor(vectors[:, first:last], device=device_name)
                sink.write(first, part if device_name != "cpu" else part.numpy())
            sink.commit({"n_missing": 0})
    return {layer: load_state(path) for layer, path in paths.items()}


def _assert_states_close(found, expected, rtol):
    for layer, state in expected.items():
        other = found[layer]
        assert np.array_equal(other.kept_rows, state.kept_rows)
        assert other.attributes["n_valid"] == state.attributes["n_valid"]
        for name in ("word_n", "word_context_pairs", "word_n_with_repeats", "sentence_n"):
            assert np.array_equal(getattr(other.sums, name), getattr(state.sums, name))
        for name in ("word_unit_sum", "word_vector_sum", "word_context_square", "unit_sum"):
            np.testing.assert_allclose(
                getattr(other.sums, name), getattr(state.sums, name), rtol=rtol, atol=rtol
            )


def test_streamed_sums_on_the_device_are_the_cpu_s(on_device, device, tmp_path):
    """The same float16 segments summed on the device and on the CPU (float64, exact sums:
    only the order of a segment's own additions differs): equal to 1e-9; and the device's
    own streamed extraction (sums on the GPU, segments never copied to the host) against
    the CPU's sums of the vectors the device extracts into memory, equal to what float16
    rounding of a pooling summed in another order allows."""
    loaded = with_spec(on_device("bert", "float32"), segment_words=3000)
    sentences = SENTENCES * 40
    _, vectors = _extract(loaded, sentences, storage_dtype="float16")
    on_cpu = _stream_into(loaded, sentences, vectors, "cpu", tmp_path / "cpu")
    here = _stream_into(loaded, sentences, vectors, str(device), tmp_path / "device")
    _assert_states_close(here, on_cpu, rtol=1e-9)
    streamed = _stream_into(loaded, sentences, None, str(device), tmp_path / "streamed")
    _assert_states_close(streamed, on_cpu, rtol=2e-3)
