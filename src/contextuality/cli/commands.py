"""Command line: each workflow step on its own, for use outside Snakemake.

contextuality sentences --text corpus.txt -o sentences.parquet
contextuality occurrence-index sentences.parquet -o index/
contextuality extract bert-base-cased --sentences sentences.parquet --index index/ -o emb/
contextuality download-elmo elmo-original   # then: extract elmo-original --loader elmo ...
contextuality measure-layer emb/layer_3.h5 --sentences sentences.parquet --index index/ -o out/l3
contextuality extract ... --partitions 3 --part 0 -o emb/part0   # one of 3 jobs, then
contextuality measure-layer emb/part*/layer_3.h5 ...        # gathers the parts' rows
contextuality stream bert-base-cased --sentences sentences.parquet --index index/ -o stream/
contextuality stream ... --partitions 3 --part 0 -o stream/part0   # one of 3 jobs, then:
contextuality merge-stream stream/part* --sentences ... --index index/ -o stream/
contextuality measures-table measures/*.json -o measures.tsv
contextuality layer-geometry emb/layer_*.h5 --index index/ -o geometry/bert
contextuality figure measures.tsv --name fig2_selfsim -o fig2.png fig2.pdf

The paper's word units: ``occurrence-index --tokenizer spacy --exclude-punctuation
--count-by occurrences``; a model's own subwords: ``occurrence-index --subwords MODEL`` and
``extract --units subword``.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from contextuality import __version__, backends, steps
from contextuality.backends.elmo.release import RELEASE_DIRECTORY, RELEASES
from contextuality.backends.settings import ModelSettings
from contextuality.benchmarks import BENCHMARKS, OOV_POLICIES, PROTOCOLS, ScoringSettings
from contextuality.cli.argument_types import (
    nonnegative_int,
    output_directory,
    output_file,
    positive_int,
)
from contextuality.cli.figure_commands import add_figure_commands
from contextuality.cli.geometry_commands import add_geometry_command
from contextuality.cli.measure_commands import (
    add_measure_layer_command,
    add_sampling_arguments,
    measure_outputs,
)
from contextuality.cli.model_options import add_model_arguments, model_options
from contextuality.cli.study_commands import add_study_commands
from contextuality.cli.training_commands import add_training_commands
from contextuality.cli.verify_commands import add_verify_command
from contextuality.cli.workflow_commands import add_workflow_command
from contextuality.configuration.schema import default
from contextuality.corpus import sentences as corpus_io
from contextuality.corpus.index import COUNT_RULES, IndexFiles, IndexSettings
from contextuality.corpus.settings import STS_YEARS, CorpusSettings, StsSource, TextSource
from contextuality.corpus.words import WORD_TOKENIZERS
from contextuality.errors import ConfigError
from contextuality.measures.registry import CENSUSES
from contextuality.measures.settings import MeasureSettings
from contextuality.measures.static import METHODS
from contextuality.streaming.state import StreamingSettings


def _sentences(args: argparse.Namespace) -> None:
    if args.sts:
        settings = CorpusSettings(
            "sts",
            "sts",
            sts=StsSource(
                args.years, verify_checksums=not args.no_verify, scored_only=args.scored_only
            ),
        )
        sources = [Path(args.sts) / f"STS{year}-en-test.zip" for year in args.years]
    else:
        settings = CorpusSettings(
            Path(args.text).stem,
            "text",
            text=TextSource(args.text, args.pattern, args.split_sentences),
        )
        sources = corpus_io.text_corpus_files(args.text, args.pattern)
    steps.sentences(settings, sources, args.output)


def _index(args: argparse.Namespace) -> None:
    settings = IndexSettings(
        min_contexts=args.min_contexts,
        lowercase=args.lowercase,
        tokenizer=args.tokenizer,
        exclude_punctuation=args.exclude_punctuation,
        count_by=args.count_by,
    )
    output = IndexFiles.in_directory(args.output)
    if args.subwords is None:
        steps.occurrence_index(args.sentences, settings, output)
    else:
        section = {"source": args.subwords, "units": "subword"}
        model = backends.model_settings(Path(args.subwords).name, section)
        steps.subword_index(args.sentences, model, settings, output)


def _model(args: argparse.Namespace) -> tuple[ModelSettings, tuple[int, ...]]:
    """The model's settings (`model_options`) and the layers they extract."""
    model = model_options(args)
    return model, backends.model_layers(model)


def _layer_outputs(output: str, layers: tuple[int, ...], suffix: str) -> steps.LayerOutputs:
    """One file per layer (``layer_<L><suffix>``) and meta.json, in directory `output`."""
    out = Path(output)
    return steps.LayerOutputs(
        {layer: out / f"layer_{layer}{suffix}" for layer in layers}, out / "meta.json"
    )


def _extract(args: argparse.Namespace) -> None:
    model, layers = _model(args)
    steps.extract(
        model,
        args.sentences,
        IndexFiles.in_directory(args.index),
        _layer_outputs(args.output, layers, ".h5"),
        part=(args.part, args.partitions),
        threads=args.threads,
        seed=args.seed,
    )


def _stream(args: argparse.Namespace) -> None:
    model, layers = _model(args)
    index = IndexFiles.in_directory(args.index)
    measures = MeasureSettings(baseline_sample_size=args.baseline_sample_size, seed=args.seed)
    outputs = _layer_outputs(args.output, layers, ".state.h5")
    steps.stream(
        model,
        args.sentences,
        index,
        outputs,
        measures,
        word_sample_size=args.word_sample_size,
        part=(args.part, args.partitions),
        threads=args.threads,
    )
    if args.partitions == 1:  # a part is measured once merged ('merge-stream')
        _measure_states(outputs, index, measures, args.output)


def _measure_states(
    outputs: steps.LayerOutputs, index: IndexFiles, measures: MeasureSettings, output: str
) -> None:
    """Each streamed layer's measures beside its state file."""
    for layer, state in outputs.files.items():
        prefix = Path(output) / f"layer_{layer}"
        steps.measure_streamed_layer(state, index, measures, measure_outputs(prefix))


def _merge_stream(args: argparse.Namespace) -> None:
    parts = [Path(directory) for directory in args.parts]
    found = (re.fullmatch(r"layer_(\d+)\.state\.h5", path.name) for path in parts[0].iterdir())
    layers = sorted(int(match[1]) for match in found if match)
    if not layers:
        raise ConfigError(f"{parts[0]}: no layer_<L>.state.h5 of a part of 'stream --partitions'")
    outputs = _layer_outputs(args.output, layers, ".state.h5")
    steps.merge_stream(
        {layer: [part / f"layer_{layer}.state.h5" for part in parts] for layer in layers},
        [part / "meta.json" for part in parts],
        outputs,
    )
    measures = MeasureSettings(baseline_sample_size=args.baseline_sample_size, seed=args.seed)
    _measure_states(outputs, IndexFiles.in_directory(args.index), measures, args.output)


def _summarize(args: argparse.Namespace) -> None:
    for census in CENSUSES if args.census else ():  # first: a summary without one is refused
        steps.census_table(args.summaries, Path(args.census) / f"{census}.tsv", census)
    steps.measures_table(args.summaries, args.output)


def _static(args: argparse.Namespace) -> None:
    if args.state and len(args.shard) != 1:
        raise ConfigError("static --state reads one state file")
    steps.static_vectors(
        IndexFiles.in_directory(args.index),
        args.method,
        args.output,
        shards=None if args.state else args.shard,
        state=args.shard[0] if args.state else None,
    )


def _score(args: argparse.Namespace) -> None:
    settings = ScoringSettings(args.benchmarks, lowercase=not args.keep_case, oov=args.oov)
    labels = {
        "source": "cli",
        "model": Path(args.vectors).stem,
        "method": "",
        "layer": None,
        "protocol": args.protocol,
    }
    vocab = None if args.index is None else IndexFiles.in_directory(args.index).vocab
    table = steps.score_static(args.vectors, args.data, settings, labels, args.output, vocab)
    print(table[["benchmark", "metric", "value", "coverage", "n"]].to_string(index=False))


def _download_elmo(args: argparse.Namespace) -> None:
    steps.download_elmo(args.release, Path(RELEASE_DIRECTORY) / args.release, args.mirror)


def _add_corpus_commands(commands: Any) -> None:
    """The commands that build the corpus: 'sentences' and 'occurrence-index'."""
    command = commands.add_parser("sentences", help="build the sentence table")
    source = command.add_mutually_exclusive_group(required=True)
    source.add_argument("--text", help="UTF-8 text file, or a directory of them")
    source.add_argument("--sts", help="directory holding STS<year>-en-test.zip archives")
    command.add_argument(
        "--pattern",
        default=default("corpus", "text", "pattern"),
        help="files of a --text directory (glob; ** any depth)",
    )
    command.add_argument(
        "--years", type=int, nargs="+", default=list(STS_YEARS), help="STS years to read"
    )
    command.add_argument("--no-verify", action="store_true", help="skip STS checksum checks")
    command.add_argument(
        "--scored-only", action="store_true", help="keep only STS pairs with a gold score"
    )
    command.add_argument(
        "--split-sentences", action="store_true", help="split lines (paragraphs) into sentences"
    )
    command.add_argument(
        "-o", "--output", type=output_file, required=True, help="sentences.parquet to write"
    )
    command.set_defaults(run=_sentences)

    command = commands.add_parser(
        "occurrence-index", aliases=["index"], help="build the occurrence index and vocabulary"
    )
    command.add_argument("sentences", help="sentences.parquet from 'sentences'")
    command.add_argument(
        "--min-contexts",
        type=positive_int,
        default=IndexSettings.min_contexts,
        help="index a word occurring in at least this many sentences (the paper: 5)",
    )
    command.add_argument(
        "--lowercase", action="store_true", help="index lowercased words (models see the text)"
    )
    command.add_argument(
        "--tokenizer",
        choices=WORD_TOKENIZERS,
        default=IndexSettings.tokenizer,
        help="what a word is: this package's rule (regex) or spaCy's tokens (the paper's)",
    )
    command.add_argument(
        "--exclude-punctuation", action="store_true", help="never index punctuation"
    )
    command.add_argument(
        "--count-by",
        choices=COUNT_RULES,
        default=IndexSettings.count_by,
        help="what --min-contexts counts",
    )
    command.add_argument(
        "--subwords", metavar="MODEL", help="index the subwords of MODEL's tokenizer instead"
    )
    command.add_argument(
        "-o", "--output", type=output_directory, required=True, help="directory to write into"
    )
    command.set_defaults(run=_index)


def _add_part_arguments(command: argparse.ArgumentParser, gathered: str) -> None:
    """--partitions N and --part K: run part K of N, cut by sentences as the workflow cuts
    (config ``extraction.partitions``)."""
    command.add_argument(
        "--partitions",
        type=positive_int,
        default=1,
        metavar="N",
        help="split the job into N parts of whole sentences, balanced by rows, each run "
        "alone with --part",
    )
    command.add_argument(
        "--part",
        type=nonnegative_int,
        default=0,
        metavar="K",
        help=f"with --partitions: run part K (0 to N-1) alone; {gathered}",
    )


def _add_model_commands(commands: Any) -> None:
    """The commands that run a model: 'extract', 'stream' and 'download-elmo'."""
    command = commands.add_parser("extract", help="write one HDF5 shard per layer of a model")
    add_model_arguments(command)
    command.add_argument(
        "--seed",
        type=nonnegative_int,
        default=MeasureSettings.seed,
        help="seed of the sentences run alone as well as in their batches (the parity check)",
    )
    _add_part_arguments(command, "'measure-layer' gathers the parts")
    command.set_defaults(run=_extract)

    command = commands.add_parser(
        "stream",
        help="measure a model without shards: state files and measures per layer (exact "
        "SelfSim, IntraSim, anisotropy; MEV from a sample of each word)",
    )
    add_model_arguments(command)
    command.add_argument(
        "--word-sample-size",
        type=positive_int,
        default=StreamingSettings.word_sample_size,
        help="occurrences kept per word for MEV",
    )
    add_sampling_arguments(command)
    _add_part_arguments(command, "'merge-stream' merges the parts, then measures")
    command.set_defaults(run=_stream)

    command = commands.add_parser(
        "merge-stream",
        help="merge the parts of 'stream --partitions' into one state file per layer, the one "
        "job's of the same rows, and measure it",
    )
    command.add_argument("parts", nargs="+", help="every part's output directory, in order")
    command.add_argument("--index", required=True, help="directory written by 'occurrence-index'")
    add_sampling_arguments(command)
    command.add_argument(
        "-o", "--output", type=output_directory, required=True, help="directory to write into"
    )
    command.set_defaults(run=_merge_stream)

    command = commands.add_parser(
        "download-elmo", help="fetch a published ELMo into resources/elmo/<release>/"
    )
    command.add_argument("release", choices=sorted(RELEASES), help="the published ELMo to fetch")
    command.add_argument("--mirror", help="directory holding the files under their published names")
    command.set_defaults(run=_download_elmo)


def _add_measure_commands(commands: Any) -> None:
    """The commands that measure: 'measure-layer', 'static-vectors', 'score-static',
    'measures-table'."""
    add_measure_layer_command(commands)

    command = commands.add_parser(
        "static-vectors", aliases=["static"], help="static vectors of one shard (word2vec text)"
    )
    command.add_argument("shard", nargs="+", help="a layer's shard, or the shards of its parts")
    command.add_argument(
        "--state", action="store_true", help="the file is a 'stream' state file, not a shard"
    )
    command.add_argument("--index", required=True, help="directory written by 'occurrence-index'")
    command.add_argument(
        "--method",
        choices=METHODS,
        default=METHODS[0],
        help="pc1: each word's first principal component (the paper's); mean: its mean",
    )
    command.add_argument(
        "-o", "--output", type=output_file, required=True, help=".txt file to write"
    )
    command.set_defaults(run=_static)

    command = commands.add_parser(
        "score-static", aliases=["score"], help="score word2vec/GloVe text vectors (Table 1)"
    )
    command.add_argument("vectors", help="word2vec or GloVe text file of word vectors")
    command.add_argument("--data", required=True, help="benchmark data root (wordsim/, …)")
    command.add_argument(
        "--benchmarks",
        nargs="+",
        choices=list(BENCHMARKS),
        default=list(BENCHMARKS),
        help="benchmarks to score (default: all of Table 1's)",
    )
    command.add_argument(
        "--oov",
        choices=OOV_POLICIES,
        default=default("static", "oov"),
        help="a word without a vector: the mean vector, or skip its pairs",
    )
    command.add_argument("--keep-case", action="store_true", help="do not lowercase words")
    command.add_argument(
        "--protocol",
        choices=PROTOCOLS,
        default=default("static", "protocols")[0],
        help="standard scoring, or as the paper's authors ran the benchmarks",
    )
    command.add_argument(
        "--index", help="word index directory whose vocabulary the paper protocol keeps"
    )
    command.add_argument(
        "-o", "--output", type=output_file, required=True, help="scores .tsv to write"
    )
    command.set_defaults(run=_score)

    command = commands.add_parser(
        "measures-table", aliases=["summarize"], help="gather layer summaries into one table"
    )
    command.add_argument(
        "summaries", nargs="+", help="layer summaries (.json) from 'measure-layer'"
    )
    command.add_argument(
        "-o", "--output", type=output_file, required=True, help="measures .tsv to write"
    )
    command.add_argument(
        "--census",
        type=output_directory,
        help="also write the measures' census tables (<census>.tsv) into this directory",
    )
    command.set_defaults(run=_summarize)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``contextuality`` command."""
    parser = argparse.ArgumentParser(prog="contextuality", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    _add_corpus_commands(commands)
    _add_model_commands(commands)
    _add_measure_commands(commands)
    add_geometry_command(commands)
    add_study_commands(commands)
    add_training_commands(commands)
    add_figure_commands(commands)
    add_workflow_command(commands)
    add_verify_command(commands)
    return parser


def run(argv: list[str] | None = None) -> None:
    """Parse `argv` (None: the process's arguments) and run the command it names; a
    ContextualityError says what the user gave that is wrong (`contextuality.cli.main`
    prints it in one line)."""
    args = build_parser().parse_args(argv)
    args.run(args)
