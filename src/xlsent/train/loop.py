"""The dual-encoder training loop: shared weights, gradient accumulation, dev selection, resume.

One optimisation step consumes `batch_size` pairs as `batch_size / (micro_batch_size ×
processes)` micro-batches per process; the in-batch negatives of the ranking loss are the
whole batch's (`negatives: batch`, by gradient caching: `xlsent.train.cached_tr`) or each
(global) micro-batch's (`negatives: micro_batch`). What is optimised is the run's method
(`xlsent.train.objectives`), by AdamW (`xlsent.train.optim`). Every `eval_every` steps the
dev P@1 (similarity search of each language's dev pairs, both directions averaged) picks the
best checkpoint; every `checkpoint_every` steps, and on SIGTERM (Slurm preemption) or SIGINT
(Ctrl-C), the full state is saved so that a restarted job continues exactly where it
stopped: weights, optimizer, scheduler, data position and random state (the files, and the
fingerprint of the run a checkpoint must match: `xlsent.train.checkpoints`).

Pretraining (`mlm`, `tlm`) reads the same files: `mlm` as monolingual sentences drawn
language by language (`xlsent.train.data.LanguageSampler`), each micro-batch as many
sentences as a pair batch has (2 × micro_batch_size). A pretraining run exports its last
step, not its best dev P@1 (which it does not optimise; it is logged all the same), with the
MLM head that the runs starting from it (`init_from`) predict with.
"""

from __future__ import annotations

import json
import logging
import signal
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import torch
from torch import nn

from xlsent.devices import KEYS as DEVICE_KEYS
from xlsent.devices import device_record, distinct
from xlsent.failures.kill_points import kill_point
from xlsent.io import atomic_path, write_json
from xlsent.models import encoder
from xlsent.models.mlm_head import save_mlm_head
from xlsent.models.rtl_head import english_vocabulary
from xlsent.models.sentence import DEFAULT_PRECISION, autocast
from xlsent.ragged import Ragged
from xlsent.search import p_at_1
from xlsent.train import distributed, optim, step
from xlsent.train.checkpoints import (
    Attempts,
    Checkpoints,
    fingerprints,
    random_state,
    set_random_state,
)
from xlsent.train.collate import Batch, Tokens, collate
from xlsent.train.data import (
    EpochSampler,
    LanguageSampler,
    Monolingual,
    Pairs,
    WordAligned,
    language_probabilities,
    load_pairs,
    monolingual,
    pair_lengths,
)
from xlsent.train.mapped_pool import mapped_pairs, mapped_word_aligned, remove_pool
from xlsent.train.objectives import Objectives
from xlsent.train.records import TrainRecords
from xlsent.train.reproducible import fixed_reduction_order
from xlsent.train.resume_notes import write_record
from xlsent.train.settings import ModelSpec, TrainSettings, identity
from xlsent.train.speed import Throughput, peak_tflops

log = logging.getLogger(__name__)


# The signals after which the trainer saves its state and stops (`Trainer.run`).
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Preempted(SystemExit):
    """Raised after a stop signal (`STOP_SIGNALS`), once the state is saved; the job is meant
    to be rerun."""


class Trainer:
    def __init__(
        self,
        settings: TrainSettings,
        model_spec: ModelSpec,
        train_paths: dict[str, Path],
        dev_paths: dict[str, Path],
        checkpoint_dir: Path,
        negative_paths: dict[str, Path] | None = None,
    ):
        """`train_paths`: per language, the subword files, or for `wacse` the word-span files
        (`xlsent.train.word_spans`); `dev_paths`: the dev subword files; `checkpoint_dir`:
        where the run's checkpoints and best weights are kept (`Checkpoints`);
        `negative_paths` (`train.hard_negatives` above 0): per language, the hard-negative
        stage's file of the training pairs (`xlsent.hard_negatives`).

        The steps run in this order: what the seed draws (the model's initialisation, then
        the heads') depends on it."""
        self.settings = settings
        self.model_spec = model_spec
        self.attempts = Attempts()  # this job's clocks start: set up, trained and evaluated
        self.checkpoints = Checkpoints(checkpoint_dir)
        self.world, self.device = distributed.world_and_device(settings.device)
        fixed_reduction_order(self.device)
        # What the passes compute in: bf16 and tf32 only act on CUDA (`step.computing`).
        self.computes = settings.precision if self.device.type == "cuda" else "fp32"
        # This job's device in its records (`xlsent.devices`): the tables say it on every row.
        self.attempts.machine = {
            **device_record(self.device, self.computes),
            "processes": self.world.size,
        }
        self.accumulation = step.micro_batches(settings, self.world.size)
        torch.manual_seed(settings.seed)
        tokens = Tokens.read(model_spec.tokenizer_dir)
        self.special = (tokens.cls, tokens.sep, tokens.pad)
        self.train_data, self.words = self._training_data(train_paths, negative_paths)
        self.dev_data = {
            lang: load_pairs({lang: path}, settings.max_length, settings.dev_max_pairs)
            for lang, path in dev_paths.items()
        }
        self.model = self._build_model(list(train_paths))
        self.languages = encoder.language_ids(self.model)
        self.objective = self._build_objective(tokens)
        self.forward = self._distributed(self.objective)
        self._seed_rank()
        self.optimizer, self.scheduler = optim.adamw(self.objective, settings)
        # Where the run stands: what a checkpoint saves.
        self.sampler = self._sampler()
        self.step = 0
        self.best: dict = {"step": None, "dev_p1": -1.0}
        self.history: list[dict] = []
        # The main process reads the inputs through once; the others take its fingerprint.
        inputs = [*train_paths.values(), *dev_paths.values(), *(negative_paths or {}).values()]
        mine = (
            fingerprints(settings, model_spec, inputs, self.world.size) if self.world.main else None
        )
        # The identity a checkpoint records, and one a checkpoint written before may carry.
        fingerprints_of_main = distributed.gather_objects(mine, self.world)[0]
        self.fingerprint, self._earlier_fingerprint = fingerprints_of_main
        self._stop = False
        self._builder = batch_builder(self.device)

    # -- setup -------------------------------------------------------------------------------
    def _training_data(
        self, paths: dict[str, Path], negatives: dict[str, Path] | None
    ) -> tuple[Pairs | Monolingual, WordAligned | None]:
        """The pool of training examples: the pairs (each language's capped at `max_pairs`; for
        `wacse` with their words and links; with `negatives`, each pair's mined hard negatives,
        mined among the same pairs), for `mlm` as monolingual sentences; at least one (global)
        micro-batch of them."""
        s = self.settings
        if bool(s.hard_negatives) != bool(negatives):
            raise ValueError(
                f"train.hard_negatives is {s.hard_negatives}, and the hard-negative files are "
                f"{'given' if negatives else 'not given'}: give them (--negative-files) exactly "
                "when it is above 0"
            )
        words = None
        if s.method_row.needs_links:
            pool, words, link_stats = mapped_word_aligned(
                paths, s.max_length, self.checkpoints.directory, self.world, negatives, s.max_pairs
            )
            for lang, counts in link_stats.items():
                log.info(
                    "%s: %d links, %d dropped by truncation to %d tokens",
                    lang,
                    counts["links"],
                    counts["links_truncated"],
                    s.max_length,
                )
        else:
            pool = mapped_pairs(
                paths, s.max_length, self.checkpoints.directory, self.world, negatives, s.max_pairs
            )
        mined = 0 if pool.negatives is None else pool.negatives.shape[1]
        if s.hard_negatives > mined:
            raise ValueError(
                f"train.hard_negatives is {s.hard_negatives}, but the hard-negative files hold "
                f"{mined} a pair: raise hard_negatives.mine.mined, or lower it"
            )
        if s.method_row.monolingual:
            pool = monolingual(pool)
            probabilities = self._language_probabilities(pool).round(4).tolist()
            log.info(
                "monolingual sentences per language: %s; sampled with probabilities %s",
                dict(zip(pool.langs, pool.counts().tolist(), strict=True)),
                dict(zip(pool.langs, probabilities, strict=True)),
            )
        per_step = s.micro_batch_size * self.world.size
        if len(pool) < per_step:
            raise ValueError(
                f"the training set has {len(pool)} pairs, fewer than one micro-batch "
                f"({per_step} pairs): lower train.micro_batch_size"
            )
        return pool, words

    def _build_model(self, langs: list[str]) -> nn.Module:
        """The encoder the model entry names, with language embeddings for `langs` and its
        word embeddings frozen where the settings ask."""
        s, spec = self.settings, self.model_spec
        model = encoder.build(
            spec.init, spec.tokenizer_dir, spec.pretrained_dir, s.max_length, spec.shape
        )
        # In the model's config, so that the objectives, the export and every loader read them.
        spec.sentence.record(model.config)
        if s.language_embeddings:
            encoder.add_language_embeddings(model, langs, s.seed)
        if s.freeze_word_embeddings:
            model.get_input_embeddings().weight.requires_grad_(False)
        return model

    def _build_objective(self, tokens: Tokens) -> Objectives:
        """The method's losses and heads over the model, on the device; with `freeze_encoder`
        the heads alone train, the encoder fixed once they are built (DAP's RTL head copies
        the encoder's embeddings and last layers, and the copies train)."""
        s = self.settings
        if s.freeze_encoder and not s.trains_a_head:
            raise ValueError(
                f"train.freeze_encoder: method {s.method!r} trains no head beside the encoder, "
                "so nothing would train; leave the encoder free, or take a method with a head "
                "(mlm, tlm, tr-tlm, dap, wacse with AWP) or pooler: mlp"
            )
        pretrained = self.model_spec.pretrained_dir
        objective = Objectives(
            self.model,
            self.settings,
            tokens,
            self.languages,
            str(pretrained) if pretrained else None,
            distributed.gather if self.world.size > 1 else None,
            rtl_vocabulary=self._rtl_vocabulary(tokens.sep),
        ).to(self.device)
        if s.freeze_encoder:
            self.model.requires_grad_(False)
        return objective

    def _distributed(self, objective: Objectives) -> nn.Module:
        """What computes a micro-batch's loss: `objective`, wrapped by DDP under several
        processes."""
        if self.world.size == 1:
            return objective
        from torch.nn.parallel import DistributedDataParallel

        return DistributedDataParallel(
            objective,
            device_ids=[self.device.index] if self.device.type == "cuda" else None,
            # AWP's head sits idle in a micro-batch without an aligned word.
            find_unused_parameters=objective.mlm is not None,
        )

    def _seed_rank(self) -> None:
        """Give every process but the first a random stream of its own, once the weights are
        drawn (the same in every process; DDP copies rank 0's anyway): dropout then masks each
        process's rows independently, as one process masks the rows of its batch, not with the
        same masks in every process. Rank 0 goes on with the run's own stream, so that a run
        of one process trains exactly as before. The collators' draws (AWP's words, MLM's
        masks) are seeded by the rank already (`batch`)."""
        if self.world.rank:
            seed = np.random.SeedSequence([self.settings.seed, self.world.rank])
            torch.manual_seed(int(seed.generate_state(1, np.uint64)[0]))

    def _language_probabilities(self, pool: Monolingual) -> np.ndarray:
        return language_probabilities(
            pool.counts(), self.settings.language_sampling, pool.langs.index("en")
        )

    def _sampler(self, state: dict | None = None) -> EpochSampler | LanguageSampler:
        """The draws of training examples (from a checkpoint's `state`): pairs in seeded
        epochs (in micro-batches of similar length with `length_window`: each global
        micro-batch is one `take`), or MLM's sentences language by language."""
        s, state = self.settings, state or {}
        if s.method_row.monolingual:
            if s.length_window:
                raise ValueError(
                    "train.length_window sorts pairs into micro-batches; mlm draws sentences "
                    "language by language: leave it at 0"
                )
            return LanguageSampler(
                self.train_data, self._language_probabilities(self.train_data), s.seed, **state
            )
        if not s.length_window:
            return EpochSampler(len(self.train_data), s.seed, **state)
        return EpochSampler(
            len(self.train_data),
            s.seed,
            **state,
            lengths=pair_lengths(self.train_data),
            batch=s.micro_batch_size * self.world.size,
            window=s.length_window,
        )

    def _rtl_vocabulary(self, sep: int) -> np.ndarray | None:
        """The token ids DAP's RTL head predicts over: under `rtl_vocabulary: english` (DAP's
        code) those of the English training side and </s>, which are every id a target can
        be; derived from the settings and the input files, so the checkpoint's fingerprint
        covers it. None: the whole vocabulary."""
        if not self.settings.method_row.has("rtl") or self.settings.rtl_vocabulary == "all":
            return None
        ids = english_vocabulary(self.train_data.en.values, sep)
        log.info("RTL predicts over the %d token ids of the English training side", len(ids))
        return ids

    # -- checkpoints ---------------------------------------------------------------------------
    def save_checkpoint(self) -> None:
        """Save the full state (the main process writes; every process's random state)."""
        rng = distributed.gather_objects(random_state(self.device), self.world)
        if self.world.main:
            self.checkpoints.save(
                {
                    "fingerprint": self.fingerprint,
                    "step": self.step,
                    "model": self.objective.state_dict(),
                    "optimizer": self.optimizer.state_dict(),
                    "scheduler": self.scheduler.state_dict(),
                    "sampler": self.sampler.state(),
                    "best": self.best,
                    "history": self.history,
                    "attempts": self.attempts.until(self.step),
                    "rng": rng,
                }
            )
            # What it was trained with, for the process that plans the next run to read.
            write_record(
                self.checkpoints.directory, self.step, identity(self.settings), self.world.size
            )
            log.info("checkpoint at step %d: %s", self.step, self.checkpoints.last)
        distributed.barrier(self.world)

    def resume(self) -> bool:
        """Continue from the latest checkpoint that loads if it belongs to this exact run."""
        found = self.checkpoints.load(self.device, set_broken_aside=self.world.main)
        # The jobs recorded beside the latest checkpoint written: beyond the one that loads
        # when a later one broke, their time counts all the same.
        recorded = self.checkpoints.recorded_attempts((self.fingerprint, self._earlier_fingerprint))
        if found is None:
            if recorded is not None:
                self.attempts.lost(recorded[1])
            return False
        path, state = found
        if state["fingerprint"] not in (self.fingerprint, self._earlier_fingerprint):
            log.warning("%s was written for other settings or inputs; starting afresh", path)
            distributed.barrier(self.world)  # every process has read it before it goes
            if self.world.main:
                self.checkpoints.discard()
            return False
        self.step = state["step"]
        self.objective.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.sampler = self._sampler(state["sampler"])
        self.best = state["best"]
        self.history = state["history"]
        self.attempts.resumed(state)
        if recorded is not None and recorded[0] > self.step:
            self.attempts.lost(recorded[1])
        if self.world.main:
            self.checkpoints.resumed(self.step, self.best["step"])
        set_random_state(state["rng"][self.world.rank], self.device)
        log.info("resumed from %s at step %d", path, self.step)
        return True

    # -- training ------------------------------------------------------------------------------
    def batch(self, index: np.ndarray, micro: int = 0) -> Batch:
        """The tensors of the pairs `index` (this process's share of micro-batch `micro` of
        the current step), built by the method's collator on the CPU (pinned for a fast copy
        to a GPU)."""
        # AWP's word draws depend on where they happen, not on what ran before: a resumed
        # run draws the same words, and batches can be built ahead in another thread.
        rng = np.random.default_rng([self.settings.seed, self.step, micro, self.world.rank])
        batch = self.objective.collator(self.train_data, index, self.words, rng)
        return batch.pin() if self.device.type == "cuda" else batch

    def _built(self, indices: list[np.ndarray]) -> Iterator[Batch]:
        """The step's micro-batches in order, each built in a background thread while the
        device computes on the one before."""
        upcoming = self._builder.submit(self.batch, indices[0], 0)
        for micro in range(len(indices)):
            batch = upcoming.result()
            if micro + 1 < len(indices):
                upcoming = self._builder.submit(self.batch, indices[micro + 1], micro + 1)
            yield batch

    def train_step(self) -> dict:
        """One optimizer step over `batch_size` pairs (`accumulate`, then clip and step)."""
        record = self.accumulate()
        grad_norm = nn.utils.clip_grad_norm_(
            self.objective.parameters(), self.settings.max_grad_norm
        )
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.step += 1
        return {**record, "grad_norm": float(grad_norm)}

    def accumulate(self) -> dict:
        """The gradients of one step's `batch_size` pairs (`xlsent.train.step`); the step's
        loss, its parts and its real tokens."""
        share = self.settings.micro_batch_size * self.settings.sentences_per_pair
        self.objective.train()
        # Every process draws the same global micro-batches and trains on its slice of each.
        # The sampler moves past the step here, which is where checkpoints see it.
        indices = [
            self.sampler.take(share * self.world.size)[
                self.world.rank * share : (self.world.rank + 1) * share
            ]
            for _ in range(self.accumulation)
        ]
        return step.accumulate(
            self.objective,
            self._built(indices),
            len(indices),
            forward=self.forward,
            no_sync=self.forward.no_sync if self.world.size > 1 else None,
            device=self.device,
            world_size=self.world.size,
        )

    @torch.inference_mode()
    def evaluate(self, precision: str = DEFAULT_PRECISION) -> dict:
        """Dev P@1 (%) per language, the mean of both directions (foreign → English and back),
        and its mean over languages; `dev_without` lists the languages with no dev pair (not
        in the mean). `precision`: how the sentences are encoded (`evaluate.precision`, the
        evaluations' own: `_encode`)."""
        self.objective.eval()
        scores, directions = {}, {}
        for lang, pairs in self.dev_data.items():
            if len(pairs) == 0:  # only below corpus.min_dev_pairs with min_pairs_action: warn
                continue
            xx = self._encode(pairs.xx, lang, precision)
            en = self._encode(pairs.en, "en", precision)
            directions[lang] = {
                "xx2en": round(100 * p_at_1(xx, en), 2),
                "en2xx": round(100 * p_at_1(en, xx), 2),
            }
            scores[lang] = round(float(np.mean(list(directions[lang].values()))), 2)
            kill_point("train.evaluate")
        mean = round(float(np.mean(list(scores.values()))), 2) if scores else float("nan")
        without = [lang for lang in self.dev_data if lang not in scores]
        return {
            "dev_p1": mean,
            "dev": scores,
            "dev_directions": directions,
            **({"dev_without": without} if without else {}),
        }

    def _encode(self, rows: Ragged, lang: str, precision: str = DEFAULT_PRECISION) -> np.ndarray:
        """Sentence vectors of `rows` at `precision` (`xlsent.models.sentence.autocast`), as
        the evaluations encode, whatever precision training computes in: dev P@1 chooses the
        checkpoint, so it is the same on every device."""
        # As many sentences a batch as a training micro-batch encodes (its N pairs' 2N
        # sentences), which fit by construction: on a CPU, multilingual-e5-small encodes
        # batches of 64 1.5 times as fast as of 256, as training's are sized for it.
        batch = 2 * self.settings.micro_batch_size
        out = np.zeros((len(rows), self.model.config.hidden_size), np.float32)
        for part in encoder.length_sorted(rows.lengths, batch):
            ids, mask = collate(rows.take(part), *self.special)
            types = None if self.languages is None else torch.full_like(ids, self.languages[lang])
            with autocast(self.device.type, precision):
                vectors = encoder.sentence_vectors(
                    self.model,
                    ids.to(self.device),
                    mask.to(self.device),
                    None if types is None else types.to(self.device),
                    self.model_spec.sentence.pooling,
                )
            out[part] = vectors.float().cpu().numpy()
        return out

    def _request_stop(self, signum: int, _frame: object) -> None:
        name = signal.Signals(signum).name
        log.warning("%s: saving a checkpoint after this step, then stopping", name)
        self._stop = True

    def run(self, log_path: Path | None = None, dev_precision: str = DEFAULT_PRECISION) -> dict:
        """Train to `max_steps` (resuming if possible); return the best dev record.

        `log_path`: the live log (`train_log.jsonl`), which TensorBoard's event files join
        under the checkpoint directory with `train.tensorboard`; `dev_precision`: how dev P@1
        encodes (`evaluate.precision`)."""
        s = self.settings
        self.resume()
        records = None  # one process keeps the records
        if self.world.main:  # for the cost table: what the jobs before this one cost
            self.checkpoints.record_attempts(self.attempts.earlier)
            board = self.checkpoints.directory / "tensorboard" if s.tensorboard else None
            # The live log restarts from what the checkpoint knew.
            records = TrainRecords(log_path, board, self.history, self.step)
        # SIGTERM (Slurm's preemption, `kill`) and SIGINT (Ctrl-C, which reaches every job of
        # the terminal's Snakemake) stop the same way: the step's state saved, then resumed.
        previous = {sig: signal.signal(sig, self._request_stop) for sig in STOP_SIGNALS}
        # Dev P@1 chooses the checkpoint: its precision is the training's record too.
        self.attempts.machine["dev_precision"] = dev_precision
        speed = Throughput(peak_tflops(self.device, self.computes, s.peak_tflops))
        losses = []
        if s.max_steps == 0 and self.world.main:
            # Nothing trains: the starting model is the export, with its dev P@1 (step 0).
            self.best = {"step": 0, **self.evaluate(dev_precision)}
            self._log({"step": 0, **self.best, "best": True}, records)
        try:
            while self.step < s.max_steps:
                started = time.perf_counter()
                record = self.train_step()
                # The step's own time: the evaluations and checkpoints below are not training.
                seconds = time.perf_counter() - started
                kill_point("train.step")
                losses.append(record)
                # Every process's pairs and tokens (this one's times the processes), this
                # process's FLOPs on its own device.
                tokens = record["tokens"] * self.world.size
                speed.add(s.batch_size, tokens, sum(record["flops"].values()), seconds)
                if self.step % s.log_every == 0 or self.step == s.max_steps:
                    lrs = self.scheduler.get_last_lr()  # the encoder's groups, then the heads'
                    entry = {
                        "step": self.step,
                        "loss": round(float(np.mean([r["loss"] for r in losses])), 5),
                        **{f"loss_{name}": _mean(losses, name) for name in record["parts"]},
                        **_diagnostics(losses),
                        "lr": lrs[0],
                        **({"head_lr": lrs[-1]} if s.head_lr is not None else {}),
                        "grad_norm": round(record["grad_norm"], 4),
                        **speed.fields(),
                    }
                    if isinstance(self.sampler, LanguageSampler):
                        # MLM: sentences left out of a batch that held their translation.
                        entry["translations_dropped"] = self.sampler.dropped
                    self._log(entry, records)
                    losses = []
                if self.world.main and (self.step % s.eval_every == 0 or self.step == s.max_steps):
                    result = self.evaluate(dev_precision)
                    # A pretraining run keeps its latest weights: "best" is the last step.
                    improved = s.pretraining or result["dev_p1"] > self.best["dev_p1"]
                    if improved:
                        self.best = {"step": self.step, **result}
                        self.checkpoints.save_best(self.step, self.model, self.objective.mlm)
                    self._log({"step": self.step, **result, "best": improved}, records)
                self._stop = distributed.any_flag(self._stop, self.world, self.device)
                if self.step % s.checkpoint_every == 0 or self._stop:
                    self.save_checkpoint()
                    kill_point("train.checkpoint")
                if self._stop:
                    raise Preempted(
                        f"stopped by a signal at step {self.step}: the same command resumes "
                        f"the training at step {self.step} ({self.checkpoints.last})"
                    )
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            if records is not None:
                records.close()
        return self.best

    def _log(self, entry: dict, records: TrainRecords | None) -> None:
        if not self.world.main:
            return
        self.history.append(entry)
        log.info(json.dumps(entry))
        if records is not None:
            records.write(entry)

    def close(self) -> None:
        """Stop the batch-building thread (before the process group goes: no thread of the
        training outlives it)."""
        self._builder.shutdown(wait=True, cancel_futures=True)

    def trained_on(self) -> list[dict]:
        """What the jobs that trained the run trained on (`xlsent.devices`): the distinct
        records of its jobs (a job of a checkpoint written before the records has none)."""
        keys = (*DEVICE_KEYS, "dev_precision", "processes")
        return distinct(
            {key: job[key] for key in keys if key in job}
            for job in self.attempts.until(self.step)
            if "device" in job
        )

    def export(self, out_dir: Path, run_config: dict) -> None:
        """Write the best model (HF + sentence-transformers) and the run's records."""
        self.checkpoints.check_best(self.best["step"])
        if self.best["step"]:
            best = self.checkpoints.load_best(self.best["step"], self.device)
            self.model.load_state_dict(best["model"])
            if self.objective.mlm is not None:
                self.objective.mlm.load_state_dict(best["mlm_head"])
        self.model.to("cpu")
        with atomic_path(out_dir) as tmp:
            encoder.save(self.model, self.model_spec.tokenizer_dir, tmp, self.settings.max_length)
            if self.objective.mlm is not None:
                save_mlm_head(self.objective.mlm, self.model.get_input_embeddings().weight, tmp)
            kill_point("train.export")
            write_json(tmp / "run.json", {**run_config, "trained_on": self.trained_on()})
            write_json(tmp / "best.json", self.best)
            with open(tmp / "train_log.jsonl", "w") as f:
                f.writelines(json.dumps(entry) + "\n" for entry in self.history)
        self.checkpoints.finish(self.fingerprint, self.step, self.attempts.until(self.step))
        remove_pool(self.checkpoints.directory)  # a rerun from last.pt writes it again


def batch_builder(device: torch.device) -> ThreadPoolExecutor:
    """The thread that builds (and pins) the next micro-batch while `device` computes, bound
    to it (`distributed.bind_thread`)."""
    return ThreadPoolExecutor(
        max_workers=1,
        thread_name_prefix="batches",
        initializer=distributed.bind_thread,
        initargs=(device,),
    )


def _mean(records: list[dict], part: str) -> float:
    return round(float(np.mean([r["parts"][part] for r in records])), 5)


def _diagnostics(records: list[dict]) -> dict[str, float | None]:
    """The steps' diagnostics (`step.accumulate`; AWP's), each the mean over the steps that
    have a value, as the losses are averaged over the steps of a log line (None where none
    has: a step without an aligned word has no term). Empty without diagnostics, so that
    other methods' log lines stay as they were."""
    names = dict.fromkeys(name for r in records for name in r.get("diagnostics", {}))
    means: dict[str, float | None] = {}
    for name in names:
        values = [r["diagnostics"].get(name) for r in records if "diagnostics" in r]
        values = [value for value in values if value is not None]
        means[name] = round(float(np.mean(values)), 5) if values else None
    return means
