"""The bridge to MTEB, the field's evaluation harness (Muennighoff et al., 2023,
arXiv:2210.07316; MMTEB, Enevoldsen et al., 2025, arXiv:2502.13595).

A trained encoder runs MTEB's own tasks (STS17, STS22, XNLI, BUCC, Tatoeba, Flores, ...)
through MTEB's own evaluators, and MTEB writes its own result JSON, so the numbers are the
ones other papers report with the same harness. The pieces:

- `XlsentEncoder`, MTEB's encoder protocol over any encoder of `xlsent.models.load`. MTEB
  names the languages of a task's subset, not of each text it encodes: a subset of one
  language (STS22 `de`, XNLI `de`, a Flores column `kaz_Cyrl`) gives our encoder that
  language; a pair (Tatoeba `kaz-eng`, STS17 `en-de`) gives none, which only encoders with
  language embeddings need (those refuse, with a message).
- `LocalTatoeba`, a bitext-mining task over LASER's Tatoeba files on disk (`evaluate.tatoeba`)
  in the layout of MTEB's hub task `Tatoeba`: per language a subset `{xxx}-eng` whose
  `sentence1` (the foreign side) retrieves among `sentence2` (English). Its `accuracy` is the
  fraction of foreign sentences whose nearest English sentence is their translation: our
  Tatoeba `xx2en` accuracy over 100. No download, so it also runs where the hub cannot.
- `run` (tasks by name, subsets kept to English and the evaluated languages, one JSON per task,
  and the devices the model trained and was evaluated on beside them) and `read_results`,
  `read_devices` (those files back for `xlsent.tables.mteb.mteb_table`).

Hub tasks read their data from the Hugging Face hub, or offline from a cache filled
beforehand (`fetch`; docs/configuration.md, air-gapped clusters).
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import mteb
import numpy as np
from datasets import Dataset, DatasetDict
from mteb import AbsTask, TaskMetadata, TaskResult
from mteb.abstasks.text.bitext_mining import AbsTaskBitextMining
from mteb.languages.iso_mappings import _get_iso1_to_iso3
from mteb.models.abs_encoder import AbsEncoder
from mteb.models.model_meta import ModelMeta, ScoringFunction

from xlsent import languages
from xlsent.evaluate import tatoeba
from xlsent.evaluate.encoding import Encoder
from xlsent.failures.errors import XlsentError
from xlsent.io import atomic_path, read_json, write_json

log = logging.getLogger(__name__)

# Beside a run's MTEB result JSON: what the model trained on and what encoded the tasks
# (`xlsent.devices`), which MTEB's own files do not say.
DEVICES_FILE = "xlsent_devices.json"

# MTEB's own ISO 639-1 → 639-3 table (macrolanguages: zh → zho, fa → fas, sw → swa): its
# datasets code a language so where LASER's files name an individual language (cmn, pes, swh).
_ISO1_TO_3: dict[str, str] = _get_iso1_to_iso3()
_ISO3_TO_1 = {iso3: iso1 for iso1, iso3 in _ISO1_TO_3.items()}


class MtebError(XlsentError):
    """An MTEB evaluation that cannot run as configured; the message says what to change."""


def iso639_3(code: str) -> list[str]:
    """The ISO 639-3 codes MTEB's datasets may use for the language `code` of our table."""
    language = languages.get(code)
    codes = [language.iso3]
    if code in _ISO1_TO_3 and _ISO1_TO_3[code] not in codes:
        codes.append(_ISO1_TO_3[code])
    return codes


def _our_code(iso3: str) -> str | None:
    if iso3 in languages.BY_ISO3:
        return languages.BY_ISO3[iso3].code
    code = _ISO3_TO_1.get(iso3)
    return code if code in languages.LANGUAGES else None


def subset_language(task_metadata: TaskMetadata, hf_subset: str) -> str | None:
    """The code (our table's) of the one language of an MTEB subset; None for a subset that
    pairs two languages, or whose language our table lacks.

    The subset is looked up in the task's metadata (STS22 `de` → deu-Latn); a parallel
    dataset passes its column instead (Flores `kaz_Cyrl`), read as a language-script code.
    """
    langscripts = task_metadata.hf_subsets_to_langscripts.get(hf_subset)
    if langscripts is None:
        langscripts = [hf_subset.replace("_", "-")]
    iso3 = {langscript.split("-")[0] for langscript in langscripts}
    return _our_code(iso3.pop()) if len(iso3) == 1 else None


class XlsentEncoder(AbsEncoder):
    """MTEB's encoder protocol over `encode(texts, lang)` (`xlsent.models.load.load_encoder`).

    `needs_language`: the encoder has language embeddings and must be told each text's
    language, which MTEB gives only for subsets of one language.
    """

    def __init__(
        self,
        encode: Encoder,
        name: str,
        revision: str,
        *,
        needs_language: bool = False,
        max_tokens: int | None = None,
    ) -> None:
        self.model = encode
        self.needs_language = needs_language
        self.mteb_model_meta = ModelMeta.create_empty(
            {
                # MTEB wants organisation/name; its result folders use it.
                "name": f"xlsent/{name}",
                "revision": revision,
                "max_tokens": max_tokens,
                "framework": ["PyTorch"],
                "similarity_fn_name": ScoringFunction.COSINE,  # what Tatoeba retrieval ranks by
                "use_instructions": False,
            }
        )

    def encode(
        self,
        inputs: Iterable[dict[str, Any]],
        *,
        task_metadata: TaskMetadata,
        hf_split: str,
        hf_subset: str,
        prompt_type: Any = None,
        **kwargs: Any,
    ) -> np.ndarray:
        """One vector per text of `inputs` (MTEB's batches of {"text": [...]})."""
        texts = [text for batch in inputs for text in batch["text"]]
        lang = subset_language(task_metadata, hf_subset)
        if lang is None and self.needs_language:
            raise MtebError(
                f"MTEB task {task_metadata.name} encodes subset {hf_subset!r}, which pairs two "
                "languages without saying which text is in which, but this encoder has "
                "language embeddings and needs each text's language: evaluate it on tasks "
                "whose subsets hold one language, or train it without language embeddings"
            )
        try:
            return np.asarray(self.model(texts, lang), dtype=np.float32)
        except ValueError as err:  # a language without an embedding
            raise MtebError(f"MTEB task {task_metadata.name}, subset {hf_subset}: {err}") from err


LASER_CITATION = r"""@article{artetxe-schwenk-2019-massively,
  author = {Artetxe, Mikel and Schwenk, Holger},
  journal = {Transactions of the Association for Computational Linguistics},
  pages = {597--610},
  title = {Massively Multilingual Sentence Embeddings for Zero-Shot Cross-Lingual Transfer
    and Beyond},
  volume = {7},
  year = {2019},
}"""


def _digest(paths: Sequence[Path]) -> str:
    """A short content hash of the files: the dataset revision MTEB records."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


class LocalTatoeba(AbsTaskBitextMining):
    """MTEB's `Tatoeba` task over LASER's files in a directory: build one with `over`."""

    # As MTEB's Tatoeba; its `accuracy` is our xx2en accuracy over 100.
    MAIN_SCORE = "f1"
    directory: Path
    langs: list[str]

    @classmethod
    def over(cls, directory: str | os.PathLike[str], langs: Sequence[str]) -> LocalTatoeba:
        """The task over the files of `langs` in `directory`. MTEB keeps a task's metadata
        on its class (it restores it from there after unloading the data), so each task gets
        a class of its own with the metadata of its languages and files."""
        langs = list(langs)
        files = [path for lang in langs for path in tatoeba.tatoeba_files(directory, lang)]
        metadata = TaskMetadata(
            name=cls.__name__,
            dataset={"path": str(directory), "revision": _digest(files)},
            description="LASER's Tatoeba test set (v1) read from local files, in the layout "
            "of MTEB's Tatoeba task: the foreign side retrieves among the English side.",
            reference=tatoeba.LASER_URL,
            type="BitextMining",
            category="t2t",
            modalities=["text"],
            eval_splits=["test"],
            eval_langs={cls.subset(lang): cls._langscripts(lang) for lang in langs},
            main_score=cls.MAIN_SCORE,
            date=("2006-01-01", "2018-11-17"),  # the Tatoeba dump LASER took
            domains=["Written"],
            task_subtypes=[],
            license="cc-by-2.0",
            annotations_creators="human-annotated",
            dialect=[],
            sample_creation="found",
            bibtex_citation=LASER_CITATION,
        )
        attributes = {"metadata": metadata, "directory": Path(directory), "langs": langs}
        return type(cls.__name__, (cls,), attributes)()

    @staticmethod
    def subset(lang: str) -> str:
        """The subset of `lang`, named as in MTEB's Tatoeba task: `kaz-eng`."""
        return f"{languages.get(lang).iso3}-eng"

    @staticmethod
    def _langscripts(lang: str) -> list[str]:
        language = languages.get(lang)
        return [f"{language.iso3}-{language.script}", "eng-Latn"]

    def load_data(self, num_proc: int | None = None, **kwargs: Any) -> None:
        """Each language's pairs from the LASER files (`xlsent.evaluate.tatoeba.read_pairs`)."""
        if self.data_loaded:
            return
        self.dataset = {}
        for lang in self.langs:
            xx, en = tatoeba.read_pairs(self.directory, lang)
            split = Dataset.from_dict({"sentence1": xx, "sentence2": en})
            self.dataset[self.subset(lang)] = DatasetDict({"test": split})
        self.data_loaded = True


# Tasks of ours, by name, beside MTEB's registry.
LOCAL_TASKS = {"LocalTatoeba": LocalTatoeba}


def tasks(names: Sequence[str], langs: Sequence[str], tatoeba_dir: str | None) -> list[AbsTask]:
    """The MTEB tasks `names`, each kept to its subsets of English and `langs` only (Flores'
    pairs among them included); `LocalTatoeba` reads `tatoeba_dir`."""
    codes = ["eng", *(code for lang in langs for code in iso639_3(lang))]
    out: list[AbsTask] = []
    for name in names:
        if name in LOCAL_TASKS:
            if tatoeba_dir is None:
                raise MtebError(
                    f"MTEB task {name} reads the LASER files of evaluate.tatoeba.dir: set it"
                )
            out.append(LOCAL_TASKS[name].over(tatoeba_dir, langs))
            continue
        try:
            out.append(mteb.get_task(name, languages=codes, exclusive_language_filter=True))
        except KeyError as err:
            raise MtebError(
                f"evaluate.mteb.tasks: {err.args[0]} (MTEB's task names, or ours: "
                f"{', '.join(LOCAL_TASKS)})"
            ) from None
        except ValueError:
            raise MtebError(
                f"evaluate.mteb.tasks: MTEB task {name} has no subset in English and the "
                f"evaluated languages ({' '.join(langs)}): drop it, or evaluate its languages "
                "(evaluate.mteb.languages)"
            ) from None
    return out


def fetch(names: Sequence[str], langs: Sequence[str]) -> None:
    """Download the data of the hub tasks `names` (their subsets of `langs`) into the Hugging
    Face cache (`HF_HOME`, which the caller sets before the libraries are imported)."""
    for task in tasks([name for name in names if name not in LOCAL_TASKS], langs, None):
        log.info("fetching %s", task.metadata.name)
        task.load_data()


def run(
    encoder: XlsentEncoder,
    task_list: Sequence[AbsTask],
    out_dir: str | os.PathLike[str],
    batch_size: int,
    devices: Mapping[str, object] | None = None,
) -> list[TaskResult]:
    """Evaluate `encoder` on every task through MTEB and write MTEB's result JSON of each,
    `{task}.json`, into the directory `out_dir` (published whole once all tasks are done),
    and `devices` (`xlsent.evaluate.results.vectors_devices`: what the model trained on and
    what encoded the tasks' texts) beside them as `DEVICES_FILE`, which the table reads."""
    result = mteb.evaluate(
        encoder,
        task_list,
        encode_kwargs={"batch_size": batch_size},
        cache=None,  # no ~/.cache/mteb: the results go to out_dir only
        overwrite_strategy="always",
        co2_tracker=False,
    )
    with atomic_path(out_dir) as tmp:
        tmp.mkdir()
        for task_result in result.task_results:
            task_result.to_disk(tmp / f"{task_result.task_name}.json")
        if devices is not None:
            write_json(tmp / DEVICES_FILE, devices)
    return list(result.task_results)


def read_devices(directory: str | os.PathLike[str]) -> dict | None:
    """The devices' record `run` wrote beside a directory's results; None for results from
    before the record existed."""
    path = Path(directory) / DEVICES_FILE
    return read_json(path) if path.exists() else None


def read_results(directory: str | os.PathLike[str]) -> list[dict]:
    """The main score of every task, split and subset in a directory of MTEB result JSON:
    rows {task, split, subset, metric, value} (value as MTEB writes it: a fraction)."""
    rows = []
    paths = sorted(p for p in Path(directory).glob("*.json") if p.name != DEVICES_FILE)
    if not paths:
        raise MtebError(f"{directory} holds no MTEB result JSON: run its eval_mteb job again")
    for path in paths:
        try:
            result = TaskResult.from_disk(path)
        except (ValueError, KeyError) as err:
            raise MtebError(f"{path} is not an MTEB result file ({err}): delete it") from None
        metric = _main_score_name(result)
        for split, scores in result.scores.items():
            for score in scores:
                rows.append(
                    {
                        "task": result.task_name,
                        "split": split,
                        "subset": score["hf_subset"],
                        "metric": metric,
                        "value": float(score["main_score"]),
                    }
                )
    return rows


def _main_score_name(result: TaskResult) -> str:
    """The name of the task's main score (cosine_spearman, f1, max_ap, ...)."""
    if result.task_name in LOCAL_TASKS:
        return LOCAL_TASKS[result.task_name].MAIN_SCORE
    try:
        return result.task.metadata.main_score
    except KeyError:  # a task this MTEB version no longer has: name what is known
        return "main_score"
