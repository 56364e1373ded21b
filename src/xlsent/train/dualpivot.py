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

Adam (lr 1e-3, batch 32) as the paper, a fixed number of steps and the final head (the
authors stop early on a validation loss; see docs/methods.md). What the head reads is cached
per sentence when the pooling commutes with the layer mix and the cache fits in `cache_mb`
(`Features`); otherwise every step runs the frozen encoder over its batch.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn
from tqdm import tqdm

from xlsent.evaluate.search import p_at_1
from xlsent.faults import kill_point
from xlsent.losses.critic import critic_loss
from xlsent.losses.cycle import cycle_loss
from xlsent.losses.triplet import triplet_ranking_loss
from xlsent.models.dualpivot import DualPivotHead, HeadConfig, hidden_states, pooled_states
from xlsent.models.encoder import pad

log = logging.getLogger(__name__)

METHODS = ("dualpivot-sup", "dualpivot-unsup", "dualpivot-layer")
Rows = Sequence[Sequence[int]]


@dataclass(frozen=True)
class DualPivotSettings:
    """A dual-pivot run's settings: the config's `dualpivot` block (defaults and meaning in
    the config schema) with the run's overrides, its method and seed."""

    method: str
    seed: int
    pivot: str = "de"
    pooling: str = "sum"
    negatives: int = 1
    margin: float = 0.0
    hinge: bool = True
    cycle_weight: float = 5.0
    critic_steps: int = 2
    unpaired: bool = True
    lr: float = 0.001
    batch_size: int = 32
    steps: int = 2000
    log_every: int = 100
    max_pairs: int = 100000
    dev_max_pairs: int = 2000
    dropout: float = 0.1
    layer_weights: bool = True
    linear_map: bool = True
    layer: int | None = None
    max_length: int = 128
    cache_mb: int = 4096
    device: str = "auto"

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"dual-pivot method is one of {', '.join(METHODS)}")
        if self.method == "dualpivot-sup" and not (self.layer_weights or self.linear_map):
            raise ValueError(
                "dualpivot-sup with neither layer_weights nor linear_map has nothing to train: "
                "for a frozen layer's bag of embeddings use method dualpivot-layer"
            )


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


def _dev_p1(xx: torch.Tensor, en: torch.Tensor) -> float:
    """P@1 (%) of aligned unit vectors, both directions averaged."""
    a, b = xx.detach().cpu().numpy(), en.detach().cpu().numpy()
    return 100 * (p_at_1(a, b) + p_at_1(b, a)) / 2


def _subset(rows: tuple[Rows, Rows], limit: int, seed: int) -> tuple[list, list]:
    """A seeded random subset of at most `limit` aligned rows (all of them, in order, if fewer)."""
    n = len(rows[0])
    keep = (
        np.arange(n)
        if n <= limit
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
    record: the pivot's dev P@1 and the loss history."""
    torch.manual_seed(settings.seed)
    rng = np.random.default_rng(settings.seed)
    generator = torch.Generator().manual_seed(settings.seed)
    encoder.eval().requires_grad_(False)
    states, hidden = encoder.config.num_hidden_layers + 1, encoder.config.hidden_size
    dev_xx, dev_en = _subset(dev_pairs, settings.dev_max_pairs, settings.seed)
    if settings.method == "dualpivot-layer":
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
            index = np.arange(len(dev_xx))
            score = _dev_p1(dev[0].vectors(head, index), dev[1].vectors(head, index))
        head.train()
        return round(score, 2)

    step_fn = _supervised if settings.method == "dualpivot-sup" else _unsupervised
    history = step_fn(
        settings, head, source, target, len(train_xx), rng, generator, dev_p1, log_path
    )
    head.eval()
    record = {"dev_p1": dev_p1(), "pivot": settings.pivot, "steps": settings.steps, "cached": cache}
    _append(log_path, {"step": settings.steps, **record})
    return head.eval(), {**record, "history": history}


def _supervised(settings, head, source, target, n_pairs, rng, generator, dev_p1, log_path) -> list:
    """L_sup = h(y_s, y_t) over aligned batches (§3.3)."""
    optimizer = torch.optim.Adam(head.parameters(), lr=settings.lr)
    history: list[dict] = []
    head.train()
    for step in tqdm(range(1, settings.steps + 1), desc="dualpivot-sup", mininterval=10):
        index, _ = batch_indices(n_pairs, settings.batch_size, False, rng)
        y_s, y_t = source.vectors(head, index), target.vectors(head, index)
        negatives = random_negatives(len(index), settings.negatives - 1, generator)
        negatives = negatives.to(y_s.device)
        loss = triplet_ranking_loss(y_s @ y_t.T, negatives, settings.margin, settings.hinge)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        _record(history, step, settings, log_path, dev_p1, loss=loss.item())
    return history


def _unsupervised(
    settings, head, source, target, n_pairs, rng, generator, dev_p1, log_path
) -> list:
    """κ critic steps on L_disc, then one head step on −L_disc + λ·L_cycle (§3.2)."""
    hidden = head.cfg.hidden
    # F and G (and the critic's score) carry dropout as in the authors' code.
    maps = nn.ModuleDict(
        {
            "F": nn.Sequential(nn.Linear(hidden, hidden), nn.Dropout(settings.dropout)),
            "G": nn.Sequential(nn.Linear(hidden, hidden), nn.Dropout(settings.dropout)),
        }
    )
    critic = nn.Sequential(nn.Linear(hidden, 1), nn.Dropout(settings.dropout))
    device = source.device
    maps.to(device)
    critic.to(device)
    generator_opt = torch.optim.Adam([*head.parameters(), *maps.parameters()], lr=settings.lr)
    critic_opt = torch.optim.Adam(critic.parameters(), lr=settings.lr)
    unit = nn.functional.normalize
    history: list[dict] = []
    head.train()
    for step in tqdm(range(1, settings.steps + 1), desc="dualpivot-unsup", mininterval=10):
        s_idx, t_idx = batch_indices(n_pairs, settings.batch_size, settings.unpaired, rng)
        with torch.no_grad():
            fixed_s, fixed_t = source.vectors(head, s_idx), target.vectors(head, t_idx)
        critic.requires_grad_(True)
        for _ in range(settings.critic_steps):
            disc = critic_loss(critic(fixed_s)[:, 0], critic(fixed_t)[:, 0])
            critic_opt.zero_grad()
            disc.backward()
            critic_opt.step()
        critic.requires_grad_(False)  # the head's step must not move the critic
        y_s, y_t = source.vectors(head, s_idx), target.vectors(head, t_idx)
        adversarial = -critic_loss(critic(y_s)[:, 0], critic(y_t)[:, 0])
        n_random = settings.negatives - 1
        cycle = cycle_loss(
            y_s,
            unit(maps["G"](maps["F"](y_s)), dim=-1),
            y_t,
            unit(maps["F"](maps["G"](y_t)), dim=-1),
            random_negatives(len(s_idx), n_random, generator).to(device),
            random_negatives(len(t_idx), n_random, generator).to(device),
            settings.margin,
            settings.hinge,
        )
        loss = adversarial + settings.cycle_weight * cycle
        generator_opt.zero_grad()
        loss.backward()
        generator_opt.step()
        _record(
            history,
            step,
            settings,
            log_path,
            dev_p1,
            loss=loss.item(),
            critic=disc.item(),
            cycle=cycle.item(),
        )
    return history


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


def _record(history: list, step: int, settings: DualPivotSettings, path, dev_p1, **values) -> None:
    kill_point("dualpivot.train")
    if step % settings.log_every == 0 or step == settings.steps:
        entry = {"step": step, **{k: round(v, 5) for k, v in values.items()}, "dev_p1": dev_p1()}
        history.append(entry)
        log.info(json.dumps(entry))
        _append(path, entry)


def _append(path: Path | None, entry: dict) -> None:
    if path is not None:
        with open(path, "a") as f:
            f.write(json.dumps(entry) + "\n")


def settings_fields() -> set[str]:
    """The settings a run's JSON may carry (all but the method and seed, given apart)."""
    return {f.name for f in dataclasses.fields(DualPivotSettings)} - {"method", "seed"}
