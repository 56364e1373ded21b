"""Training a dual-pivot head over a frozen encoder, on one pivot pair.

Tien and Steinert-Threlkeld (2022), "Bilingual alignment transfers to multilingual alignment
for unsupervised parallel text mining", arXiv:2104.07642. The head
(`xlsent.models.dualpivot`) is trained on the pairs of one language with English (the pivot,
e.g. de-en) and then encodes every language.

- `dualpivot-sup` (§3.3): bidirectional triplet ranking of aligned pairs
  (`xlsent.losses.triplet`): the hardest negative and n − 1 random ones, margin α.
- `dualpivot-unsup` (§3.2): a linear critic d learns to tell the pivot's sentence vectors
  from English ones (`xlsent.losses.critic`, κ critic steps on each batch, as the authors'
  code: the same batch κ times); the head is trained against it (−L_disc) plus λ · L_cycle
  through linear maps F and G (`xlsent.losses.cycle`). `unpaired` (default, as the paper
  claims) draws the two sides of a batch from disjoint pairs, so a batch never holds a
  sentence with its translation; the authors' code trained on aligned batches
  (`unpaired: false` reproduces it).
- `dualpivot-layer`: no training; a single frozen layer, mean-pooled (the bag-of-embeddings
  baseline): `layer`, or, when null, the layer whose vectors retrieve the pivot's dev pairs
  best (P@1, both directions). The paper picks the best layer on the evaluation task itself;
  we choose on the pivot's dev pairs only, so the non-pivot languages stay unseen.

Adam (lr 1e-3, batch 32) as the paper (§4). The schedule is the authors' code's (AllenNLP's
trainer, experiments/aligner/*.jsonnet and the README's commands): epochs of `steps_per_epoch`
random batches (their `--epoch_size 524288` pairs at batch 32: 16,384 steps), at most `epochs`
(32), each ended by the loss of the training objective on the pivot's dev pairs (AllenNLP's
default `validation_metric` "-loss"); training stops once `patience` (1) epochs in a row bring
no lower dev loss, and the head of the epoch with the lowest is kept (AllenNLP restores the
best epoch's weights). `steps`, when set, caps the steps over all epochs and ends the last
(partial) epoch there: below one epoch, the fixed-step training and last head of the small
configs. What the head reads is cached per sentence when the pooling commutes with the layer
mix and the cache fits in `cache_mb` (`Features`); otherwise every step runs the frozen
encoder over its batch.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn
from tqdm import tqdm

from xlsent.defaults import schema_defaults
from xlsent.failures.kill_points import kill_point
from xlsent.losses.critic import critic_loss
from xlsent.losses.cycle import cycle_loss
from xlsent.losses.triplet import triplet_ranking_loss
from xlsent.methods import DUALPIVOT_METHODS, METHODS, Method
from xlsent.models.dualpivot import DualPivotHead, HeadConfig, hidden_states, pooled_states
from xlsent.models.encoder import pad
from xlsent.search import p_at_1

log = logging.getLogger(__name__)

Rows = Sequence[Sequence[int]]


@dataclass(frozen=True)
@schema_defaults("dualpivot")
class DualPivotSettings:
    """A dual-pivot run's settings: the config's `dualpivot` block (defaults and meaning in
    the config schema, which `schema_defaults` gives the fields) with the run's overrides,
    its method and seed."""

    method: str
    seed: int
    pivot: str
    pooling: str
    negatives: int
    margin: float
    hinge: bool
    cycle_weight: float
    critic_steps: int
    unpaired: bool
    lr: float
    batch_size: int
    epochs: int
    steps_per_epoch: int
    patience: int | None
    steps: int | None
    log_every: int
    max_pairs: int | None
    dev_max_pairs: int
    dropout: float
    layer_weights: bool
    linear_map: bool
    layer: int | None
    max_length: int
    cache_mb: int
    device: str

    def __post_init__(self) -> None:
        if self.method not in DUALPIVOT_METHODS:
            raise ValueError(f"dual-pivot method is one of {', '.join(DUALPIVOT_METHODS)}")
        # The dual-pivot head alone trains only its layer weights and linear map.
        if self.method_row.heads(self) == ("dualpivot",) and not (
            self.layer_weights or self.linear_map
        ):
            raise ValueError(
                f"{self.method} with neither layer_weights nor linear_map has nothing to train: "
                "for a frozen layer's bag of embeddings use method dualpivot-layer"
            )

    @property
    def method_row(self) -> Method:
        """The run's method (`xlsent.methods.METHODS`)."""
        return METHODS[self.method]


class Features:
    """What the head reads of some sentences: their pooled states, computed once, or their
    token states, computed per batch (the module docstring)."""

    def __init__(
        self,
        encoder: nn.Module,
        rows: Rows,
        special: tuple[int, int, int],
        pooling: str,
        cache: bool,
    ):
        self.encoder, self.rows, self.special, self.pooling = encoder, rows, special, pooling
        self.device = next(encoder.parameters()).device
        self.pooled = (
            pooled_states(encoder, rows, special, pooling).to(self.device) if cache else None
        )

    def vectors(self, head: DualPivotHead, index: np.ndarray) -> torch.Tensor:
        """The head's unit vectors of the sentences `index`."""
        if self.pooled is not None:
            return head(self.pooled[torch.from_numpy(np.asarray(index))])
        cls_id, sep_id, pad_id = self.special
        ids, mask = pad([[cls_id, *self.rows[i], sep_id] for i in index], pad_id)
        states = hidden_states(self.encoder, ids.to(self.device), mask.to(self.device))
        # Inference-mode tensors cannot enter autograd: a plain copy can.
        return head.forward_tokens(states.float().clone(), mask.to(self.device))

    def all_vectors(self, head: DualPivotHead, batch: int) -> torch.Tensor:
        """The head's unit vectors of every sentence, in order: at once from the cache, else
        `batch` sentences at a time through the encoder (a whole dev set at once would hold
        every layer's states of every token)."""
        index = np.arange(len(self.rows))
        if self.pooled is not None:
            return self.vectors(head, index)
        parts = np.array_split(index, math.ceil(len(index) / batch))
        return torch.cat([self.vectors(head, part) for part in parts])


def cache_fits(settings: DualPivotSettings, sentences: int, states: int, hidden: int) -> bool:
    """Whether the pooled states of `sentences` (float32) fit in `settings.cache_mb`."""
    return sentences * states * hidden * 4 <= settings.cache_mb * 2**20


def random_negatives(b: int, n: int, generator: torch.Generator) -> torch.Tensor:
    """B×n indices per row of a batch of b, distinct and never the row itself."""
    if n >= b:
        raise ValueError(f"{n} random negatives need a batch of more than {n}, not {b}")
    scores = torch.rand(b, b, generator=generator)
    scores.fill_diagonal_(-1.0)
    return scores.topk(n, dim=1).indices if n else torch.zeros(b, 0, dtype=torch.long)


def batch_indices(
    n_pairs: int, batch: int, unpaired: bool, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """(source, target) pair indices of one batch: the same pairs, or, `unpaired`, two
    disjoint draws, so that no sentence meets its translation."""
    if not unpaired:
        source = rng.choice(n_pairs, size=batch, replace=False)
        return source, source
    draw = rng.choice(n_pairs, size=2 * batch, replace=False)
    return draw[:batch], draw[batch:]


def dev_batches(n_pairs: int, batch: int) -> list[np.ndarray]:
    """The dev pairs in order, cut into n_pairs // batch consecutive batches (one if there are
    fewer pairs) with the remainder spread over them: every pair counts in the dev loss, and
    each batch is about a training batch's size, so that its hardest negatives are as hard."""
    return np.array_split(np.arange(n_pairs), max(1, n_pairs // batch))


def epoch_ends(settings: DualPivotSettings) -> list[int]:
    """The steps at which the epochs end: every `steps_per_epoch` steps, `epochs` times; the
    `steps` cap, when set and reached first, ends the last (partial) epoch."""
    every = settings.steps_per_epoch
    last = settings.epochs * every
    if settings.steps is not None:
        last = min(last, settings.steps)
    return [min(end, last) for end in range(every, last + every, every)]


@dataclass
class EarlyStopping:
    """AllenNLP's MetricTracker on a loss, as the authors' trainer uses it: an epoch improves
    on a dev loss strictly below every earlier epoch's (the first epoch always does), and
    training stops after `patience` epochs in a row without improving (None: never)."""

    patience: int | None
    best: float | None = None
    waited: int = 0

    def improves(self, loss: float) -> bool:
        """Whether `loss` is the lowest yet; counts the epochs since the last that was."""
        if self.best is None or loss < self.best:
            self.best, self.waited = loss, 0
            return True
        self.waited += 1
        return False

    @property
    def exhausted(self) -> bool:
        return self.patience is not None and self.waited >= self.patience


def _dev_p1(xx: torch.Tensor, en: torch.Tensor) -> float:
    """P@1 (%) of aligned unit vectors, both directions averaged."""
    a, b = xx.detach().cpu().numpy(), en.detach().cpu().numpy()
    return 100 * (p_at_1(a, b) + p_at_1(b, a)) / 2


def _subset(rows: tuple[Rows, Rows], limit: int | None, seed: int) -> tuple[list, list]:
    """A seeded random subset of at most `limit` aligned rows (all of them, in order, if fewer
    or no limit)."""
    n = len(rows[0])
    keep = (
        np.arange(n)
        if limit is None or n <= limit
        else np.sort(np.random.default_rng(seed).choice(n, limit, replace=False))
    )
    return [rows[0][i] for i in keep], [rows[1][i] for i in keep]


def train(
    settings: DualPivotSettings,
    encoder: nn.Module,
    special: tuple[int, int, int],
    train_pairs: tuple[Rows, Rows],
    dev_pairs: tuple[Rows, Rows],
    log_path: Path | None = None,
) -> tuple[DualPivotHead, dict]:
    """Train (or choose) a head on the pivot's pairs (xx rows, en rows of subword ids without
    special tokens; `special` = the encoder's (cls, sep, pad) ids). Returns the head and its
    record: the pivot's dev P@1 and dev loss of the kept head, the schedule run (`_fit`) and
    the log's entries."""
    torch.manual_seed(settings.seed)
    rng = np.random.default_rng(settings.seed)
    generator = torch.Generator().manual_seed(settings.seed)
    encoder.eval().requires_grad_(False)
    states, hidden = encoder.config.num_hidden_layers + 1, encoder.config.hidden_size
    dev_xx, dev_en = _subset(dev_pairs, settings.dev_max_pairs, settings.seed)
    if settings.method_row.chooses_a_layer:
        return single_layer(settings, encoder, special, (dev_xx, dev_en), states, hidden)

    train_xx, train_en = _subset(train_pairs, settings.max_pairs, settings.seed)
    need = 2 * settings.batch_size if settings.unpaired else settings.batch_size
    if len(train_xx) < need:
        raise ValueError(
            f"{len(train_xx)} {settings.pivot}-en training pairs, fewer than the {need} one "
            "batch needs: lower dualpivot.batch_size or give the pivot more pairs"
        )
    cfg = HeadConfig(
        states,
        hidden,
        settings.pooling,
        settings.layer_weights,
        settings.linear_map,
        settings.dropout,
    )
    sentences = 2 * (len(train_xx) + len(dev_xx))
    cache = cfg.commutes and cache_fits(settings, sentences, states, hidden)
    if cfg.commutes and not cache:
        log.info("pooled states of %d sentences exceed cache_mb: encoding per batch", sentences)
    log.info("encoding %s (cached: %s)", "the pivot's pairs" if cache else "nothing ahead", cache)
    source, target = (
        Features(encoder, rows, special, cfg.pooling, cache) for rows in (train_xx, train_en)
    )
    dev = tuple(Features(encoder, rows, special, cfg.pooling, cache) for rows in (dev_xx, dev_en))
    head = DualPivotHead(cfg).to(source.device)

    def dev_p1() -> float:
        head.eval()
        with torch.no_grad():
            score = _dev_p1(*(side.all_vectors(head, settings.batch_size) for side in dev))
        head.train()
        return round(score, 2)

    # The head's objective, by its method's first loss (`xlsent.methods.METHODS`).
    objective = OBJECTIVES[settings.method_row.losses[0].objective](
        settings, head, (source, target), len(train_xx), rng, generator
    )
    history, schedule = _fit(settings, objective, dev, dev_p1, log_path)
    head.eval()
    record = {"dev_p1": dev_p1(), "pivot": settings.pivot, **schedule, "cached": cache}
    _append(log_path, {"step": schedule["best_step"], **record})
    return head.eval(), {**record, "history": history}


@contextmanager
def _evaluating(modules: Sequence[nn.Module]) -> Iterator[None]:
    """`modules` in eval mode (no dropout) inside, in train mode after."""
    for module in modules:
        module.eval()
    try:
        yield
    finally:
        for module in modules:
            module.train()


class _Objective(ABC):
    """A method's training objective: `step` takes one optimizer step on a random batch of the
    pivot's pairs, `loss` is the loss the step minimises, and `dev_loss` its mean on the dev
    pairs, the early-stopping criterion."""

    def __init__(
        self,
        settings: DualPivotSettings,
        head: DualPivotHead,
        data: tuple[Features, Features],
        n_pairs: int,
        rng: np.random.Generator,
        generator: torch.Generator,
    ):
        self.settings, self.head, self.data = settings, head, data
        self.n_pairs, self.rng, self.generator = n_pairs, rng, generator
        self.modules: list[nn.Module] = [head]

    @abstractmethod
    def loss(
        self, y_s: torch.Tensor, y_t: torch.Tensor, generator: torch.Generator
    ) -> torch.Tensor:
        """The loss of a batch's vectors, its random negatives drawn from `generator`."""

    @abstractmethod
    def step(self) -> dict[str, float]:
        """One optimizer step; the values the log shows."""

    def dev_loss(self, dev: tuple[Features, Features]) -> float:
        """`loss` averaged over the dev pairs' batches (`dev_batches`) with dropout off and
        the random negatives drawn alike at every epoch: the validation loss the authors'
        trainer stops early on (AllenNLP's "-loss" over their validation pairs)."""
        generator = torch.Generator().manual_seed(self.settings.seed)
        batches = dev_batches(len(dev[0].rows), self.settings.batch_size)
        with _evaluating(self.modules), torch.no_grad():
            losses = [
                self.loss(dev[0].vectors(self.head, i), dev[1].vectors(self.head, i), generator)
                for i in batches
            ]
        return torch.stack(losses).mean().item()


class _Supervised(_Objective):
    """L_sup = h(y_s, y_t) over aligned batches (§3.3)."""

    def __init__(self, settings, head, data, n_pairs, rng, generator):
        super().__init__(settings, head, data, n_pairs, rng, generator)
        self.optimizer = torch.optim.Adam(head.parameters(), lr=settings.lr)

    def loss(
        self, y_s: torch.Tensor, y_t: torch.Tensor, generator: torch.Generator
    ) -> torch.Tensor:
        s = self.settings
        negatives = random_negatives(len(y_s), s.negatives - 1, generator).to(y_s.device)
        return triplet_ranking_loss(y_s @ y_t.T, negatives, s.margin, s.hinge)

    def step(self) -> dict[str, float]:
        index, _ = batch_indices(self.n_pairs, self.settings.batch_size, False, self.rng)
        source, target = self.data
        loss = self.loss(
            source.vectors(self.head, index), target.vectors(self.head, index), self.generator
        )
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return {"loss": loss.item()}


class _Unsupervised(_Objective):
    """κ critic steps on L_disc, then one step of the head (with the linear maps F and G) on
    −L_disc + λ·L_cycle (§3.2)."""

    def __init__(self, settings, head, data, n_pairs, rng, generator):
        super().__init__(settings, head, data, n_pairs, rng, generator)
        hidden = head.cfg.hidden
        # F and G (and the critic's score) carry dropout as in the authors' code.
        self.maps = nn.ModuleDict(
            {
                "F": nn.Sequential(nn.Linear(hidden, hidden), nn.Dropout(settings.dropout)),
                "G": nn.Sequential(nn.Linear(hidden, hidden), nn.Dropout(settings.dropout)),
            }
        )
        self.critic = nn.Sequential(nn.Linear(hidden, 1), nn.Dropout(settings.dropout))
        self.maps.to(data[0].device)
        self.critic.to(data[0].device)
        self.modules += [self.maps, self.critic]
        self.generator_opt = torch.optim.Adam(
            [*head.parameters(), *self.maps.parameters()], lr=settings.lr
        )
        self.critic_opt = torch.optim.Adam(self.critic.parameters(), lr=settings.lr)

    def losses(
        self, y_s: torch.Tensor, y_t: torch.Tensor, generator: torch.Generator
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """−L_disc + λ·L_cycle, and L_cycle."""
        s, unit, maps = self.settings, nn.functional.normalize, self.maps
        adversarial = -critic_loss(self.critic(y_s)[:, 0], self.critic(y_t)[:, 0])
        cycle = cycle_loss(
            y_s,
            unit(maps["G"](maps["F"](y_s)), dim=-1),
            y_t,
            unit(maps["F"](maps["G"](y_t)), dim=-1),
            random_negatives(len(y_s), s.negatives - 1, generator).to(y_s.device),
            random_negatives(len(y_t), s.negatives - 1, generator).to(y_t.device),
            s.margin,
            s.hinge,
        )
        return adversarial + s.cycle_weight * cycle, cycle

    def loss(
        self, y_s: torch.Tensor, y_t: torch.Tensor, generator: torch.Generator
    ) -> torch.Tensor:
        return self.losses(y_s, y_t, generator)[0]

    def step(self) -> dict[str, float]:
        s, critic, head = self.settings, self.critic, self.head
        s_idx, t_idx = batch_indices(self.n_pairs, s.batch_size, s.unpaired, self.rng)
        source, target = self.data
        with torch.no_grad():
            fixed_s, fixed_t = source.vectors(head, s_idx), target.vectors(head, t_idx)
        critic.requires_grad_(True)
        for _ in range(s.critic_steps):
            disc = critic_loss(critic(fixed_s)[:, 0], critic(fixed_t)[:, 0])
            self.critic_opt.zero_grad()
            disc.backward()
            self.critic_opt.step()
        critic.requires_grad_(False)  # the head's step must not move the critic
        loss, cycle = self.losses(
            source.vectors(head, s_idx), target.vectors(head, t_idx), self.generator
        )
        self.generator_opt.zero_grad()
        loss.backward()
        self.generator_opt.step()
        return {"loss": loss.item(), "critic": disc.item(), "cycle": cycle.item()}


# The objective of each dual-pivot method that trains a head, by its first loss: L_sup's triplet
# ranking, or the critic of the adversarial game (with L_cycle).
OBJECTIVES: dict[str, type[_Objective]] = {"triplet": _Supervised, "critic": _Unsupervised}


def _fit(
    settings: DualPivotSettings,
    objective: _Objective,
    dev: tuple[Features, Features],
    dev_p1: Callable[[], float],
    log_path: Path | None,
) -> tuple[list[dict], dict]:
    """Train by the schedule (`epoch_ends`, `EarlyStopping`) and load the head of the epoch
    with the lowest dev loss, as the authors' trainer does. Returns the log's entries and what
    ran: the steps and epochs, why training stopped (`patience`, the `steps` cap, or the last
    of the `epochs`), and the kept epoch, its last step and its dev loss."""
    head, stopping = objective.head, EarlyStopping(settings.patience)
    history: list[dict] = []
    ends = epoch_ends(settings)
    start, kept = 1, None
    head.train()
    for epoch, end in enumerate(ends, start=1):
        desc = f"{settings.method} epoch {epoch}"
        for step in tqdm(range(start, end + 1), desc=desc, mininterval=10):
            values = objective.step()
            if step < end:
                _record(history, step, settings, log_path, dev_p1, values)
        loss = objective.dev_loss(dev)
        entry = _record(
            history, end, settings, log_path, dev_p1, {**values, "dev_loss": loss}, epoch
        )
        if stopping.improves(loss):
            kept = ({k: v.detach().clone() for k, v in head.state_dict().items()}, entry)
        start = end + 1
        if stopping.exhausted:
            break
    state, best = kept
    head.load_state_dict(state)
    return history, {
        "dev_loss": best["dev_loss"],
        "steps": end,
        "epochs": epoch,
        "stopped": _why_stopped(settings, end, ends[-1]),
        "best_epoch": best["epoch"],
        "best_step": best["step"],
    }


def _why_stopped(settings: DualPivotSettings, end: int, last: int) -> str:
    """Why training ended at step `end` of a schedule that runs to step `last` at most."""
    if end < last:
        return "patience"
    return "steps" if end == settings.steps else "epochs"


def single_layer(
    settings: DualPivotSettings,
    encoder: nn.Module,
    special: tuple[int, int, int],
    dev_pairs: tuple[Rows, Rows],
    states: int,
    hidden: int,
) -> tuple[DualPivotHead, dict]:
    """The bag of embeddings of one frozen layer: `settings.layer`, or the one that retrieves
    the pivot's dev pairs best (every layer scored from the same pooled states)."""
    xx = pooled_states(encoder, dev_pairs[0], special, "mean")
    en = pooled_states(encoder, dev_pairs[1], special, "mean")
    unit = nn.functional.normalize
    scores = {
        layer: round(_dev_p1(unit(xx[:, layer], dim=-1), unit(en[:, layer], dim=-1)), 2)
        for layer in range(states)
    }
    best = settings.layer
    if best is None:
        best = max(scores, key=lambda layer: (scores[layer], -layer))
    elif not 0 <= best < states:
        raise ValueError(
            f"dualpivot.layer {best} is not one of the encoder's states 0–{states - 1}"
        )
    head = DualPivotHead(
        HeadConfig(states, hidden, "mean", layer_weights=False, linear_map=False, layer=best)
    )
    log.info("layer %d; %s dev P@1 per layer: %s", best, settings.pivot, scores)
    return head.eval(), {"dev_p1": scores[best], "layer": best, "layers": scores}


def _record(
    history: list,
    step: int,
    settings: DualPivotSettings,
    path: Path | None,
    dev_p1: Callable[[], float],
    values: dict[str, float],
    epoch: int | None = None,
) -> dict | None:
    """Log a step (its `values` and the pivot's dev P@1) every `log_every` steps and at the
    end of each epoch (`epoch` given); returns the log's entry, if any."""
    kill_point("dualpivot.train")
    if epoch is None and step % settings.log_every:
        return None
    entry = {
        "step": step,
        **({} if epoch is None else {"epoch": epoch}),
        **{k: round(v, 5) for k, v in values.items()},
        "dev_p1": dev_p1(),
    }
    history.append(entry)
    log.info(json.dumps(entry))
    _append(path, entry)
    return entry


def _append(path: Path | None, entry: dict) -> None:
    if path is not None:
        with open(path, "a") as f:
            f.write(json.dumps(entry) + "\n")


def settings_fields() -> set[str]:
    """The settings a run's JSON may carry (all but the method and seed, given apart)."""
    return {f.name for f in dataclasses.fields(DualPivotSettings)} - {"method", "seed"}
