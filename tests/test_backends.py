"""The checks every model backend must pass, run on each: a tiny transformers BERT and
GPT-2 (random weights, trained tokenizers) and a tiny ELMo in the published file layout.

A new backend joins the parametrization below and must pass them all: its settings round
through the config, its layers are counted without loading weights, it loads ready to
extract, its encoder reads sentences with character offsets, and an extraction through it
gives one finite, deterministic vector per word and layer, the same whatever the batch.
"""

from __future__ import annotations

import dataclasses
import json
import re

import numpy as np
import pytest

from contextuality import backends
from contextuality.backends.base import LoadedModel, layer_output
from contextuality.corpus.words import word_spans
from contextuality.errors import ConfigError
from contextuality.extraction.units import align_to_words
from contextuality.files.provenance import config_hash

from extraction import extract_every_layer

SENTENCES = [
    "The cat sat on the mat.",
    "A dog ran in the park, and the cat watched.",
    "Bushfires forced hundreds of residents to leave their homes.",
]
# A setting each backend must refuse, as the other backend's own.
REFUSED = {
    "transformers": {"lstm_states": "carried"},
    "elmo": {"units": "subword"},
}


@pytest.fixture(params=["tiny-bert", "tiny-gpt2", "tiny-elmo"])
def section(request, tiny_bert_dir, tiny_gpt2_dir, tiny_elmo_dir) -> dict:
    """The config section of one backend's tiny model."""
    if request.param == "tiny-bert":
        return {"source": str(tiny_bert_dir)}
    if request.param == "tiny-gpt2":
        return {"source": str(tiny_gpt2_dir)}
    return {"source": str(tiny_elmo_dir), "loader": "elmo"}


@pytest.fixture
def loaded(section) -> LoadedModel:
    return backends.load_model(backends.model_settings("tiny", section))


def test_settings_round_through_the_config(section):
    """A model's recorded settings give back equal settings; its layers listed in any
    order are one extraction, and a repeat is refused, as the schema refuses it."""
    spec = backends.model_settings("tiny", section)
    settings = backends.recorded_settings(spec)
    assert backends.model_settings("tiny", settings) == spec
    assert config_hash(json.loads(json.dumps(settings))) == config_hash(settings)
    listed = backends.model_settings("tiny", {**section, "layers": [0, 2]})
    same = backends.model_settings("tiny", {**section, "layers": [2, 0]})
    assert backends.recorded_settings(same) == backends.recorded_settings(listed)
    with pytest.raises(ConfigError, match=r"models.tiny.layers: \[2, 0, 2\] has non-unique"):
        backends.model_settings("tiny", {**section, "layers": [2, 0, 2]})


def test_refuses_the_other_backend_s_settings(section):
    loader = section.get("loader", "transformers")
    with pytest.raises(ConfigError):
        backends.model_settings("tiny", {**section, **REFUSED[loader]})


def test_counts_its_layers_without_loading_weights(section, loaded):
    spec = backends.model_settings("tiny", section)
    assert backends.count_hidden_layers(spec) == loaded.n_layers
    assert backends.model_layers(spec) == tuple(range(loaded.n_layers + 1))
    assert all(path.is_file() for path in backends.model_files(spec))
    assert not backends.reads_corpus_in_order(spec)


def test_records_a_checksum_of_every_local_file_it_reads(section, loaded):
    """Local files are extraction inputs (changing one re-extracts) and their SHA-256s
    are the provenance of a model that has no hub revision."""
    from contextuality.files.provenance import sha256_file

    spec = backends.model_settings("tiny", section)
    files = backends.model_files(spec)
    assert files and loaded.file_checksums
    assert sorted(sha256_file(path) for path in files) == sorted(loaded.file_checksums.values())


def test_planning_refuses_a_missing_model_and_layers_beyond_its_last(section, tmp_path):
    spec = backends.model_settings("tiny", section)
    n_layers = backends.count_hidden_layers(spec)
    backends.check_planned_layers(
        backends.model_settings("tiny", {**section, "layers": [n_layers]})
    )
    beyond = {**section, "layers": [0, n_layers + 1]}
    with pytest.raises(ConfigError, match=rf"models\.tiny\.layers: \[{n_layers + 1}\] beyond"):
        backends.check_planned_layers(backends.model_settings("tiny", beyond))
    missing = {**section, "source": str(tmp_path / "no-such-model")}
    with pytest.raises(ConfigError, match=r"^models\.tiny\.source: .*no-such-model"):
        backends.check_planned_layers(backends.model_settings("tiny", missing))


@pytest.mark.parametrize(
    ("spelled", "listed"),
    [
        ("0-32/4", list(range(0, 33, 4))),
        ("0-10/4", [0, 4, 8]),
        (" 0, 6-8 ", [0, 6, 7, 8]),
        ("12,3", [3, 12]),
        ("5", [5]),
    ],
)
def test_layers_written_as_ranges_are_the_listed_layers_and_the_same_extraction(spelled, listed):
    """A string of layers and ranges is the list it names: the same settings and the same
    settings hash as the list in any order, so no shard of either is made again."""
    section = {"source": "no-such-org/no-such-model"}
    as_string = backends.model_settings("m", {**section, "layers": spelled})
    as_list = backends.model_settings("m", {**section, "layers": listed[::-1]})
    assert as_string == as_list
    assert as_string.layers == tuple(listed)
    assert config_hash(backends.recorded_settings(as_string)) == config_hash(
        backends.recorded_settings(as_list)
    )


@pytest.mark.parametrize(
    ("spelled", "message"),
    [
        ("3-1", "is neither a list of layers nor layers and ranges"),
        ("0..2", "is neither a list of layers nor layers and ranges"),
        ("0-8/0", "is neither a list of layers nor layers and ranges"),
        ("", "is neither a list of layers nor layers and ranges"),
        ("0-4,2", r"names layers \[2\] twice"),
    ],
)
def test_layers_written_wrongly_are_refused_in_one_line_naming_the_key(spelled, message):
    with pytest.raises(ConfigError, match=rf"^models\.m\.layers: '{re.escape(spelled)}' {message}"):
        backends.model_settings("m", {"source": "x/y", "layers": spelled})


def test_planning_leaves_an_uncached_hub_model_to_its_job():
    spec = backends.model_settings("hub", {"source": "no-such-org/no-such-model", "layers": [99]})
    backends.check_planned_layers(spec)  # nothing local tells its layer count
    assert backends.model_files(spec) == []


@pytest.fixture
def hub_at(monkeypatch):
    """Point the hub at an address (``HF_ENDPOINT``), no proxy, the probe asked afresh."""
    from contextuality.backends import hub

    def point(address: str) -> None:
        for name in ("HF_HUB_OFFLINE", *hub._PROXIES):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HF_ENDPOINT", address)
        hub.hub_unreachable.cache_clear()

    yield point
    hub.hub_unreachable.cache_clear()


def test_a_hub_that_cannot_be_reached_is_known_before_any_request(hub_at, tmp_path, monkeypatch):
    """Where the hub's name does not resolve (or HF_HUB_OFFLINE is set), a hub id is read
    from the local cache alone, and one the cache lacks is refused in one line saying so,
    with no request made (so none retried); where the hub answers (a listening port here),
    nothing changes."""
    import socket

    from contextuality.backends import hf, hub
    from contextuality.errors import ModelLoadError

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    spec = backends.model_settings("typo", {"source": "no-such-org/no-such-model"})
    hub_at("https://hub.invalid")  # a reserved name that never resolves
    assert "hub.invalid:443" in hub.hub_unreachable()
    assert hf._pretrained_options(spec)["local_files_only"] is True
    with pytest.raises(ModelLoadError) as refused:
        backends.count_hidden_layers(spec)
    message = str(refused.value)
    assert message.startswith(
        "model typo: 'no-such-org/no-such-model' is not in the local Hugging Face cache, and "
        "the hub (https://hub.invalid) cannot be reached from here (hub.invalid:443: "
    )
    assert "\n" not in message
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hub.hub_unreachable.cache_clear()
    assert hub.hub_unreachable() == "HF_HUB_OFFLINE is set"
    with socket.create_server(("127.0.0.1", 0)) as listening:
        hub_at(f"http://127.0.0.1:{listening.getsockname()[1]}")
        assert hub.hub_unreachable() is None
        assert "local_files_only" not in hf._pretrained_options(spec)
    local = backends.model_settings("local", {"source": str(tmp_path)})
    hub_at("https://hub.invalid")
    assert "local_files_only" not in hf._pretrained_options(local)  # no hub to ask


_HUB_CHECK = """
import dataclasses
import json
import re
from contextuality import backends
from contextuality.errors import ConfigError
spec = backends.model_settings("hub", {"source": "acme/tiny-bert", "layers": [0, 9]})
try:
    backends.check_planned_layers(spec)
except ConfigError as error:
    refused = str(error)
loaded = backends.load_model(backends.model_settings("hub", {"source": "acme/tiny-bert"}))
print(json.dumps({"refused": refused, "revision": loaded.revision,
                  "files": [str(path) for path in backends.model_files(spec)]}))
"""


def test_a_hub_model_records_the_commit_its_cached_files_come_from(tiny_bert_dir, tmp_path):
    """A hub id loaded from the Hugging Face cache (offline, as after a first download):
    the snapshot's commit is its recorded revision, and its cached config.json checks its
    layers while the workflow plans."""
    import os
    import shutil
    import subprocess
    import sys

    commit = "0123456789abcdef0123456789abcdef01234567"
    repository = tmp_path / "hub" / "models--acme--tiny-bert"
    shutil.copytree(tiny_bert_dir, repository / "snapshots" / commit)
    (repository / "refs").mkdir()
    (repository / "refs" / "main").write_text(commit)
    environment = os.environ | {"HF_HUB_CACHE": str(tmp_path / "hub"), "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        [sys.executable, "-c", _HUB_CHECK], env=environment, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-2000:]
    found = json.loads(result.stdout.strip().splitlines()[-1])
    assert found["revision"] == commit
    assert found["refused"] == "models.hub.layers: [9] beyond the model's hidden states 0..2"
    assert found["files"] == []  # a hub model is tracked by its revision, not its files


def test_loads_ready_to_extract(loaded):
    assert not loaded.model.training
    assert loaded.hidden_size > 0 and loaded.max_length >= 8
    assert loaded.encoder.pad_token_id is None or loaded.encoder.pad_token_id >= 0
    conventions = loaded.layer_conventions()
    assert {"layer_0", "last_layer", "final_norm", "last_layer_setting"} <= set(conventions)
    described = [layer_output(layer, loaded.n_layers, conventions) for layer in range(3)]
    assert len(set(described)) == 3 and all(described)


def test_encoder_gives_tokens_with_character_offsets(loaded):
    spans = word_spans(SENTENCES)
    encodings = loaded.encoder.encode(SENTENCES, spans)
    assert len(encodings) == len(SENTENCES)
    for sentence, encoding, sentence_spans in zip(SENTENCES, encodings, spans, strict=True):
        assert len(encoding.offsets) == len(encoding.content) > 0
        assert all(0 <= start < end <= len(sentence) for start, end in encoding.offsets)
        alignment = align_to_words(encoding.offsets, sentence_spans)
        assert set(alignment.token_unit[alignment.token_unit >= 0]) == set(
            range(len(sentence_spans))
        ), "every word gets a token"


def test_extraction_is_finite_deterministic_and_batch_invariant(loaded, tmp_path):
    n_words = sum(len(spans) for spans in word_spans(SENTENCES))
    report, vectors = extract_every_layer(loaded, SENTENCES, tmp_path / "all")
    assert vectors.shape == (loaded.n_layers + 1, n_words, loaded.hidden_size)
    assert np.isfinite(vectors).all() and report.n_occurrences == n_words
    _, again = extract_every_layer(loaded, SENTENCES, tmp_path / "again")
    np.testing.assert_array_equal(again, vectors)
    one_by_one = dataclasses.replace(loaded, spec=dataclasses.replace(loaded.spec, token_budget=1))
    _, alone = extract_every_layer(one_by_one, SENTENCES, tmp_path / "alone")
    np.testing.assert_allclose(alone, vectors, rtol=2e-3, atol=2e-3)


def test_a_relative_directory_is_a_local_model_and_a_typo_in_one_is_refused(
    tiny_bert_dir, tmp_path, monkeypatch
):
    """``models/my-bert`` (no ./) that exists is read from disk, as transformers reads
    it; ``models/my-bret`` beside it is refused while planning, not looked up on the hub;
    ``org/name`` with no such folder here stays a hub id."""
    import shutil

    from contextuality.backends.base import is_local, source_problem
    from contextuality.errors import ConfigError

    monkeypatch.chdir(tmp_path)
    shutil.copytree(tiny_bert_dir, tmp_path / "models" / "my-bert")
    found = backends.model_settings("b", {"source": "models/my-bert", "layers": [0, 2]})
    assert is_local(found) and source_problem(found) is None
    backends.check_planned_layers(found)
    assert backends.model_layers(backends.model_settings("b", {"source": "models/my-bert"})) == (
        0,
        1,
        2,
    )
    typo = backends.model_settings("b", {"source": "models/my-bret", "layers": [0]})
    with pytest.raises(ConfigError, match=r"models.b.source: no directory models/my-bret here"):
        backends.check_planned_layers(typo)
    hub = backends.model_settings("b", {"source": "org/name", "layers": [0]})
    assert not is_local(hub) and source_problem(hub) is None


def test_random_weights_are_the_architecture_initialised_again_from_their_seed(tiny_gpt2_dir):
    """``random_weights_seed``: the same config and tokenizer, transformers' initialisation
    of the weights, the same for the same seed and other for another; ELMo refuses it."""
    import torch

    def parameters(section: dict) -> list[torch.Tensor]:
        loaded = backends.load_model(backends.model_settings("tiny", section))
        seed = section.get("random_weights_seed")
        assert (loaded.revision == f"random initialisation, seed {seed}") == (seed is not None)
        return [tensor.detach().clone() for tensor in loaded.model.parameters()]

    source = {"source": str(tiny_gpt2_dir)}
    trained = parameters(source)
    first, again = (parameters({**source, "random_weights_seed": 3}) for _ in range(2))
    other = parameters({**source, "random_weights_seed": 4})
    assert [tensor.shape for tensor in first] == [tensor.shape for tensor in trained]
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    weights = [index for index, tensor in enumerate(first) if tensor.dim() == 2]
    assert not any(torch.equal(first[index], trained[index]) for index in weights)
    assert not any(torch.equal(first[index], other[index]) for index in weights)
    with pytest.raises(ConfigError, match="random_weights_seed cannot be set for loader: elmo"):
        backends.model_settings("elmo", {"source": "x", "loader": "elmo", "random_weights_seed": 1})
