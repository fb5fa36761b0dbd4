"""A fit's raw rows: each batch's own values derived on the consumer's side, bit for bit."""

from __future__ import annotations

import math
import random
import threading
import warnings

import numpy as np
import pytest

from tfstudio.core.channel import Channel
from tfstudio.core.events import EpochEnded, StepEnded, step_rows
from tfstudio.core.fit_rows import MEAN, RAW, RUNNING, RowLayout, batch_mean, raw_block

KEYS = ("accuracy", "auc", "d_loss", "loss")
KINDS = (MEAN, RUNNING, RAW, MEAN)


class Producer:
    """What StudioCallback's batch hook appends, with the scalar derivation beside it."""

    def __init__(self, channel: Channel, seed: int = 0) -> None:
        self.channel = channel
        self.rng = random.Random(seed)
        self.expected: list[StepEnded] = []
        self.global_step = 0
        self.epoch = -1
        self.layout: RowLayout | None = None

    def epoch_begin(self) -> None:
        self.epoch += 1
        self.k, self.base, self.prev_c, self.prev = 0, 0, 0.0, None
        self.layout = RowLayout(3, self.epoch, KEYS, KINDS)

    def rebase(self) -> None:  # the loss tracker reset mid-epoch (a restore)
        self.base, self.prev_c, self.prev = self.k, 0.0, None

    def step(self, running: tuple, n: int = 1, c_k: float | None = None) -> None:
        k = self.k + n
        c = (k - self.base) * 32.0 if c_k is None else c_k
        self.global_step += n
        t = self.global_step * 1e-3
        row = (self.layout, self.global_step, k, n, t, c, self.prev_c, running, self.prev)
        self.channel.rows.append(row)
        prev = dict(zip(KEYS, self.prev, strict=True)) if self.prev is not None else {}
        values = {}
        for key, kind, m in zip(KEYS, KINDS, running, strict=True):
            if kind == MEAN:
                values[key] = batch_mean(m, prev.get(key), c, self.prev_c)
            elif kind == RAW:
                values[key] = m
        means = dict(zip(KEYS, running, strict=True))
        self.expected.append(StepEnded(3, self.global_step, self.epoch, k, n, values, means, t))
        self.k, self.prev_c, self.prev = k, c, running

    def running(self) -> tuple:
        r = self.rng
        return tuple(r.uniform(-3, 3) * 10 ** r.randint(-8, 8) for _ in KEYS)


def _same(got: list[StepEnded], want: list[StepEnded]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert (g.fit_index, g.global_step, g.epoch, g.step, g.steps) == (
            w.fit_index,
            w.global_step,
            w.epoch,
            w.step,
            w.steps,
        )
        assert g.time == w.time
        assert list(g.values) == list(w.values) and list(g.running) == list(w.running)
        for key, value in w.values.items():  # bit for bit, NaN included
            assert np.float64(g.values[key]).tobytes() == np.float64(value).tobytes(), key
        for key, value in w.running.items():
            assert np.float64(g.running[key]).tobytes() == np.float64(value).tobytes(), key


def test_raw_rows_drained_in_any_cut_are_the_scalar_derivation_bit_for_bit():
    channel = Channel()
    producer = Producer(channel)
    got: list[object] = []
    rng = random.Random(7)
    for _ in range(4):
        producer.epoch_begin()
        for i in range(300):
            producer.step(producer.running(), n=rng.choice((1, 1, 1, 4)))
            if i == 150:
                producer.rebase()
            if rng.random() < 0.05:  # the pump drains mid-epoch: a block's first row
                got.extend(channel.drain())  # takes its previous values from outside
        # an epoch's last batch with the tracker's count read (a partial batch)
        producer.step(producer.running(), c_k=(producer.k - producer.base) * 32.0 + 5.0)
        channel.emit(EpochEnded(3, producer.epoch, producer.global_step, {}, 0.0))
    got.extend(channel.drain())
    steps = [e for e in step_rows(got) if type(e) is StepEnded]
    _same(steps, producer.expected)
    epochs = [e for e in got if type(e) is EpochEnded]
    assert len(epochs) == 4


def test_infinite_and_nan_running_means_derive_as_python_does_without_warnings():
    channel = Channel()
    producer = Producer(channel)
    producer.epoch_begin()
    values = [
        (1.0, 0.5, 2.0, 3.0),
        (math.inf, 0.5, math.nan, math.inf),  # a loss blowing up
        (math.inf, 0.5, 1.0, math.nan),
        (-math.inf, 0.5, 1.0, 1e308),
        (2.0, 0.5, 1.0, 1e308),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's RuntimeWarnings would fail here
        for v in values:
            producer.step(v)
        steps = step_rows(channel.drain())
    _same(steps, producer.expected)


def test_values_that_are_not_numbers_are_absent_in_their_rows_only():
    layout = RowLayout(0, 0, ("loss", "vector"), (MEAN, RAW))
    rows = [
        (layout, 1, 1, 1, 0.0, 32.0, 0.0, (2.0, 1.0), None),
        (layout, 2, 2, 1, 0.1, 64.0, 32.0, (1.5, np.array([1.0, 2.0])), (2.0, 1.0)),
        (layout, 3, 3, 1, 0.2, 96.0, 64.0, (1.0, 4.0), (1.5, "x")),
    ]
    block = raw_block(rows)
    assert block.values["loss"].tolist() == [2.0, 1.0, 0.0]  # own values all derived
    assert block.absent["vector"].tolist() == [False, True, False]
    assert block.column("vector")[1].tolist() == [1.0, 4.0]


def test_a_block_starts_a_new_one_at_each_layout_and_at_rows_of_the_old_format():
    channel = Channel()
    first, second = RowLayout(0, 0, ("loss",), (MEAN,)), RowLayout(0, 1, ("loss",), (MEAN,))
    channel.rows.append((first, 1, 1, 1, 0.0, 10.0, 0.0, (1.0,), None))
    channel.rows.append((first, 2, 2, 1, 0.0, 20.0, 10.0, (2.0,), (1.0,)))
    channel.step(0, 3, 0, 3, 1, {"loss": 5.0}, {"loss": 2.5}, 0.0)  # a derived row
    channel.rows.append((second, 4, 1, 1, 0.0, 10.0, 0.0, (7.0,), None))
    blocks = channel.drain()
    assert [len(b) for b in blocks] == [2, 1, 1]
    assert [b.epoch.tolist() for b in blocks] == [[0, 0], [0], [1]]
    assert blocks[0].values["loss"].tolist() == [1.0, 3.0]
    assert blocks[1].values["loss"].tolist() == [5.0]
    assert blocks[2].values["loss"].tolist() == [7.0]


@pytest.mark.parametrize("seed", [1, 2])
def test_raw_rows_appended_without_a_lock_while_another_thread_drains_lose_nothing(seed):
    channel = Channel()
    producer = Producer(channel, seed)
    done = threading.Event()

    def train() -> None:
        for _ in range(3):
            producer.epoch_begin()
            for _ in range(20_000):
                producer.step(producer.running())
            channel.emit(EpochEnded(3, producer.epoch, producer.global_step, {}, 0.0))
        done.set()

    got: list[object] = []
    thread = threading.Thread(target=train)
    thread.start()
    rng = random.Random(seed)
    while not done.is_set():
        got.extend(channel.drain())
        threading.Event().wait(rng.uniform(0, 0.002))
    thread.join()
    got.extend(channel.drain())
    _same([e for e in step_rows(got) if type(e) is StepEnded], producer.expected)


def test_rows_with_each_keys_own_counts_derive_each_mean_with_its_own():
    # a train_step's loss tracker counts batches (1 a batch), its MAE samples (32 a
    # batch, 5 in the epoch's partial last one): c_k and c_j are tuples, one per key
    layout = RowLayout(0, 0, ("loss", "mae", "raw"), (MEAN, MEAN, RAW))
    running = [(4.0, 2.0, 9.0), (3.0, 1.0, 8.0), (2.5, 1.25, 7.0), (2.0, 1.5, 6.0)]
    counts = [(1.0, 32.0, 1.0), (2.0, 64.0, 2.0), (3.0, 96.0, 3.0), (4.0, 101.0, 4.0)]
    channel = Channel()
    prev_c, prev = 0.0, None
    for k, (vals, c) in enumerate(zip(running, counts, strict=True), start=1):
        channel.rows.append((layout, k, k, 1, 0.0, c, prev_c, vals, prev))
        prev_c, prev = c, vals
    [block] = channel.drain()
    want_loss = [4.0] + [
        batch_mean(m, mj, ck[0], cj[0])
        for (m, _, _), (mj, _, _), ck, cj in zip(
            running[1:], running, counts[1:], counts, strict=False
        )
    ]
    want_mae = [2.0] + [
        batch_mean(m, mj, ck[1], cj[1])
        for (_, m, _), (_, mj, _), ck, cj in zip(
            running[1:], running, counts[1:], counts, strict=False
        )
    ]
    assert block.values["loss"].tolist() == want_loss == [4.0, 2.0, 1.5, 0.5]
    assert block.values["mae"].tolist() == want_mae
    assert want_mae[-1] == (101.0 * 1.5 - 96.0 * 1.25) / 5.0  # the partial batch's own
    assert block.values["raw"].tolist() == [9.0, 8.0, 7.0, 6.0]
    assert block.running["mae"].tolist() == [2.0, 1.0, 1.25, 1.5]
