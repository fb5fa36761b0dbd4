"""Steps travel as columns: the channel's blocks, the store, the recorder's bytes, the pipe."""

from __future__ import annotations

import math
import random
import threading
import time
from multiprocessing import Pipe

import numpy as np
import pytest

from tfstudio.core import channel as channel_module
from tfstudio.core.channel import Channel, coalesce
from tfstudio.core.events import (
    EpochEnded,
    FitEnded,
    FitStarted,
    ModelSummary,
    StepColumns,
    StepEnded,
    step_rows,
)
from tfstudio.core.run_store import RunStore
from tfstudio.engine.recorder import scalar_blocks, scalar_records, scalars_event


def fit(index: int, start: int) -> FitStarted:
    return FitStarted(index, ModelSummary("m", "Sequential", (), 1, 1), 1, 0, None, 1, start, 0.0)


def step(f: int, g: int, values: dict, running: dict | None = None) -> StepEnded:
    return StepEnded(f, g, 0, g, 1, values, values if running is None else running, g * 0.01)


def through_channel(events: list[object]) -> list[object]:
    """``events`` as the training side sends them: steps appended as rows, the rest emitted."""
    channel = Channel()
    for e in events:
        if type(e) is StepEnded:
            channel.step(
                e.fit_index, e.global_step, e.epoch, e.step, e.steps, e.values, e.running, e.time
            )
        else:
            channel.emit(e)
    return channel.drain()


def test_steps_become_blocks_in_order_and_read_back_as_the_same_steps():
    events = [
        fit(0, 0),
        *[step(0, g, {"loss": 1.0 / g}, {"loss": 0.5}) for g in range(1, 4)],
        EpochEnded(0, 0, 3, {"loss": 0.4}, 0.03),
        *[step(0, g, {"loss": 2.0, "acc": 0.1} if g != 5 else {"loss": 3.0}) for g in (4, 5, 6)],
        *[step(1, g, {"loss": 9.0}) for g in (7, 8)],  # another fit: a block of its own
        FitEnded(1, 8, False, 0.1),
    ]
    shipped = through_channel(events)
    assert [type(e).__name__ for e in shipped] == [
        "FitStarted",
        "StepColumns",
        "EpochEnded",
        "StepColumns",
        "StepColumns",
        "FitEnded",
    ]
    assert step_rows(shipped) == events  # every step, its values and running means, in order
    block = shipped[3]
    assert block.absent["acc"].tolist() == [False, True, False]
    assert block.column("acc")[0].tolist() == [4, 6]


def test_a_full_block_is_sealed_without_a_drain_and_a_racing_drain_loses_nothing(monkeypatch):
    monkeypatch.setattr(channel_module, "BLOCK_ROWS", 64)
    channel = Channel()
    for g in range(1, 65):
        channel.step(0, g, 0, g, 1, {"loss": 1.0}, {}, 0.0)
    assert channel.pending() == 1 and channel._rows == []  # sealed at 64 rows

    got: list[object] = []
    done = threading.Event()

    def train() -> None:
        for g in range(65, 60_001):
            channel.step(0, g, 0, g, 1, {"loss": float(g)}, {}, 0.0)
            if g % 997 == 0:
                channel.emit(EpochEnded(0, 0, g, {}, 0.0))
        done.set()

    thread = threading.Thread(target=train)
    thread.start()
    rng = random.Random(1)
    while not done.is_set():
        got.extend(channel.drain())
        time.sleep(rng.uniform(0, 0.002))
    thread.join()
    got.extend(channel.drain())
    steps = [e.global_step for e in step_rows(got) if type(e) is StepEnded]
    assert steps == list(range(1, 60_001))
    epochs = [e.global_step for e in got if type(e) is EpochEnded]
    assert epochs == [g for g in range(997, 60_001, 997)]
    # each epoch event comes right after its step
    rows = step_rows(got)
    for i, e in enumerate(rows):
        if type(e) is EpochEnded:
            assert rows[i - 1].global_step == e.global_step


def _store(events: list[object]) -> RunStore:
    store = RunStore("run")
    store.add(events)
    return store


def _same_store(a: RunStore, b: RunStore) -> None:
    for part in ("steps", "running", "epochs"):
        ta, tb = getattr(a, part), getattr(b, part)
        assert list(ta) == list(tb), part
        for key in ta:
            xa, ya = ta[key].points()
            xb, yb = tb[key].points()
            assert xa.tolist() == xb.tolist() and np.array_equal(ya, yb, equal_nan=True), key
            assert ta[key].breaks == tb[key].breaks, key
    assert a.fit_keys == b.fit_keys
    assert a.fit_steps == b.fit_steps and a.fit_loss == b.fit_loss
    assert a.spe == b.spe and a.global_step == b.global_step


def test_the_store_takes_columns_as_it_takes_the_same_steps_one_by_one():
    events = [
        fit(0, 0),
        *[step(0, g, {"loss": 1.0} if g not in (3, 4) else {}, {"auc": 0.5}) for g in range(1, 7)],
        step(0, 7, {"loss": 1.0, "auc": 0.6}),
        *[step(0, g, {"loss": 1.0 / g, "acc": math.nan}) for g in range(8, 300)],
        fit(1, 299),
        *[step(1, g, {"loss": 2.0 + g}, {}) for g in range(300, 310)],
    ]
    _same_store(_store(events), _store(through_channel(events)))


def test_a_key_sampled_from_its_start_is_one_line_and_a_dense_key_is_cut_at_its_gap():
    # a graph loop's gradient norm every 10th step: joined (cut, every point stood alone
    # and the plot was empty); a loss that skips steps 20-29 is cut there
    events = [fit(0, 0)]
    for g in range(1, 60):
        values = {"loss": 1.0 / g} if not 20 <= g < 30 else {}
        if g % 10 == 0:
            values["gradient norm (sampled)"] = 2.0 / g
        events.append(step(0, g, values))
    for store in (_store(events), _store(through_channel(events))):
        norm = store.steps["gradient norm (sampled)"]
        assert norm.breaks == [] and norm.count() == 5
        assert store.steps["loss"].breaks == [24.5]  # between steps 19 and 30


def test_a_coalesced_block_keeps_each_buckets_envelope_and_says_how_many_steps():
    rng = np.random.default_rng(0)
    n = 1000
    values = rng.normal(size=n)
    absent = np.zeros(n, dtype=bool)
    absent[100:132] = True  # two whole buckets without a value
    ones = np.ones(n, dtype=np.int64)
    block = StepColumns(
        0,
        np.arange(1, n + 1),
        0 * ones,
        np.arange(1, n + 1),
        ones,
        np.linspace(0, 1, n),
        {"loss": values, "acc": values * 2},
        {},
        {"loss": absent},
    )
    thin = coalesce(block, 16)
    assert thin.coalesced == 16 and len(thin) == 2 * math.ceil(n / 16)
    x, y = thin.column("loss")
    kept = np.where(absent, np.nan, values)
    for b in range(0, n, 16):
        if absent[b : b + 16].all():
            assert not ((x > b) & (x <= b + 16)).any()  # nothing for a bucket with no value
            continue
        inside = y[(x > b) & (x <= b + 16)]
        assert inside.min() == np.nanmin(kept[b : b + 16])
        assert inside.max() == np.nanmax(kept[b : b + 16])
    assert coalesce(thin, 16).coalesced == 128  # thinned again: each pair holds 128 steps


@pytest.mark.parametrize("n", [300, 10])
@pytest.mark.parametrize("first", [1, 120, 16_380, 2**21 - 10, 2**35])
def test_recorded_records_of_a_block_are_byte_for_byte_those_of_single_steps(first, n):
    rng = np.random.default_rng(first)
    steps = np.arange(first, first + n)
    walls = 1.8e9 + np.cumsum(rng.random(n))
    columns = {
        "step/loss": rng.normal(size=n) * 10,
        "step/acc": rng.random(n),
        "step/huge": np.full(n, 1e300),  # beyond float32: inf, as float32 holds it
    }
    columns["step/loss"][7] = math.nan
    columns["step/acc"][9] = -math.inf
    absent = {"step/acc": rng.random(n) < 0.2}
    described = {"step/acc"} if first == 120 else set()
    expected_described = set(described)
    got = scalar_records(steps, walls, columns, described, absent)
    want = []
    for i in range(n):
        values = {t: float(v[i]) for t, v in columns.items() if t not in absent or not absent[t][i]}
        values["step/huge"] = math.inf  # what float32 holds of 1e300
        want.append(scalars_event(int(steps[i]), values, float(walls[i]), expected_described))
    assert got == want
    assert described == expected_described


@pytest.mark.parametrize("n", [300, 40])
def test_a_block_with_several_absence_patterns_is_recorded_as_its_rows_would_be(n):
    # a custom loop's norm every 10th step, another series on random steps, and rows
    # with no value at all (no record): each pattern is encoded block-wise
    rng = np.random.default_rng(n)
    steps = np.arange(5, 5 + n)
    walls = 1.8e9 + np.cumsum(rng.random(n))
    columns = {
        "step/loss": rng.normal(size=n),
        "step/gradient norm": rng.random(n),
        "step/other": rng.random(n),
    }
    norm_absent = np.ones(n, dtype=bool)
    norm_absent[::10] = False
    other_absent = rng.random(n) < 0.5
    loss_absent = np.zeros(n, dtype=bool)
    loss_absent[[3, 4, 17]] = True
    other_absent[[3, 4, 17]] = True  # 3, 4, 17: nothing at all (norm is absent there too)
    absent = {
        "step/loss": loss_absent,
        "step/gradient norm": norm_absent,
        "step/other": other_absent,
    }
    described: set[str] = set()
    got = scalar_records(steps, walls, columns, described, absent)
    want = []
    expected_described: set[str] = set()
    for i in range(n):
        values = {t: float(v[i]) for t, v in columns.items() if not absent[t][i]}
        if values:
            want.append(scalars_event(int(steps[i]), values, float(walls[i]), expected_described))
    assert len(want) == n - 3
    assert got == want
    assert described == expected_described == set(columns)


def test_steps_framed_as_blocks_are_the_bytes_of_their_records_framed_one_by_one(tmp_path):
    # The recorder frames a block of steps with numpy (write_blocks): a loop's loss at
    # every step and its norm at every 10th, a tag's first (described) value, rows with
    # nothing, step numbers whose varint grows a byte (127 -> 128, 16383 -> 16384):
    # the file holds exactly what writing each record in order holds.
    from tfstudio.core.eventfile import RecordFileWriter

    rng = np.random.default_rng(3)
    for first, n in ((100, 60), (16_300, 300), (5, 3)):
        steps = np.arange(first, first + n)
        walls = 1.8e9 + np.cumsum(rng.random(n))
        columns = {"step/loss": rng.normal(size=n), "step/gradient norm": rng.random(n)}
        norm_absent = np.ones(n, dtype=bool)
        norm_absent[1::10] = False
        loss_absent = np.zeros(n, dtype=bool)
        loss_absent[2] = True  # with the norm absent too: no record for that row
        absent = {"step/loss": loss_absent, "step/gradient norm": norm_absent}
        blocks = scalar_blocks(steps, walls, columns, set(), absent)
        records = scalar_records(steps, walls, columns, set(), absent)
        assert len(records) == n - 1
        framed, one_by_one = RecordFileWriter(tmp_path / "a"), RecordFileWriter(tmp_path / "b")
        framed.write_blocks(blocks)
        for record in records:
            one_by_one.write(record)
        framed.close()
        one_by_one.close()
        assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes()
        (tmp_path / "a").unlink()
        (tmp_path / "b").unlink()


def test_a_block_with_more_sporadic_tags_than_bits_in_an_integer_is_recorded_exactly():
    # monitor.log with 70 keys, each on some steps only: patterns found without the bit
    # code (one bit per tag would overflow)
    rng = np.random.default_rng(70)
    n = 200
    steps = np.arange(1, n + 1)
    walls = 1.8e9 + np.cumsum(rng.random(n))
    columns = {f"step/k{j}": rng.random(n) for j in range(70)}
    a, b = rng.random(n) < 0.5, rng.random(n) < 0.5
    # half the tags on steps a, half on steps b: 4 patterns of ~50 rows, block-wise
    absent = {t: (a if j < 35 else b).copy() for j, t in enumerate(columns)}
    described = set(columns)
    got = scalar_records(steps, walls, columns, described, absent)
    want = []
    for i in range(n):
        values = {t: float(v[i]) for t, v in columns.items() if not absent[t][i]}
        if values:
            want.append(scalars_event(int(steps[i]), values, float(walls[i]), set(columns)))
    assert got == want


def test_a_slow_viewer_gets_a_coalesced_copy_while_the_record_gets_every_step(monkeypatch):
    from tfstudio import worker

    monkeypatch.setattr(worker, "MAX_PENDING_ROWS", 5_000)
    viewer, conn = Pipe(duplex=True)
    lost = threading.Event()
    pipe = worker.PipeSink(conn, lost.set)
    received: list[object] = []
    reading = threading.Event()

    def read() -> None:
        reading.wait()
        while True:
            kind, payload = viewer.recv()
            received.extend(payload)
            if any(type(e) is FitEnded for e in payload):
                return

    reader = threading.Thread(target=read)
    reader.start()
    record: list[object] = []
    channel = Channel()
    g = 0
    for _ in range(60):  # the pump's beats while the viewer reads nothing
        for _ in range(1000):
            g += 1
            channel.step(0, g, 0, g, 1, {"loss": float(g % 97)}, {}, g * 1e-5)
        batch = channel.drain()
        record.extend(batch)  # the sinks after the pipe get the batch as it is
        pipe.write(batch)
        assert pipe._rows <= 5_000 + 1000  # the worker's memory stays bounded
    end = FitEnded(0, g, False, 1.0)
    pipe.write([end])
    reading.set()
    assert pipe.sync(timeout=30)
    reader.join(timeout=30)
    pipe.close()
    assert not lost.is_set()
    assert sum(len(e) for e in record if type(e) is StepColumns) == 60_000
    blocks = [e for e in received if type(e) is StepColumns]
    assert pipe.coalesced_blocks > 0 and any(b.coalesced for b in blocks)
    shown = sum(len(b) for b in blocks)
    assert shown < 60_000 / 4
    xs = np.concatenate([b.global_step for b in blocks])
    assert xs[0] == 1 and xs[-1] == 60_000 and (np.diff(xs) > 0).all()  # in order, all of it
    ys = np.concatenate([b.values["loss"] for b in blocks])
    assert ys.min() == 0.0 and ys.max() == 96.0  # the envelope survived
    assert received[-1] == end


def test_a_lagging_consumer_finds_the_backlog_kept_as_columns(monkeypatch):
    monkeypatch.setattr(channel_module, "BLOCK_ROWS", 100)
    monkeypatch.setattr(channel_module, "BACKLOG_BLOCKS", 3)
    channel = Channel()
    for g in range(1, 1001):
        channel.step(0, g, 0, g, 1, {"loss": float(g)}, {}, 0.0)
    queued = list(channel._events)
    assert [type(e).__name__ for e in queued[:3]] == ["StepRows"] * 3
    assert all(type(e) is StepColumns for e in queued[3:])  # compact once the backlog grew
    steps = [e.global_step for e in step_rows(channel.drain())]
    assert steps == list(range(1, 1001))


def test_a_block_pickles_as_one_buffer_and_joined_blocks_are_the_same_steps():
    import pickle

    from tfstudio.core.events import join_steps

    values = [{"loss": 1 / g, "acc": 0.5} if g % 3 else {"loss": 2.0} for g in range(1, 40)]
    steps = [step(0, g, v) for g, v in enumerate(values, start=1)]
    blocks = through_channel(steps[:2]) + through_channel(steps[2:])
    assert len(blocks) == 2 and all(type(b) is StepColumns for b in blocks)
    (joined,) = join_steps(blocks)
    for block in [*blocks, joined, coalesce(joined, 4)]:
        back = pickle.loads(pickle.dumps(block))
        assert back.coalesced == block.coalesced and back.fit_index == block.fit_index
        for name in ("global_step", "epoch", "step", "steps", "time"):
            assert getattr(back, name).dtype == getattr(block, name).dtype
            assert np.array_equal(getattr(back, name), getattr(block, name))
        assert step_rows([back]) == step_rows([block])
    empty = StepColumns(0, *(np.zeros(0, np.int64),) * 4, np.zeros(0), {}, {})
    assert len(pickle.loads(pickle.dumps(empty))) == 0  # pickled field by field
    assert step_rows([joined]) == step_rows(blocks)  # a key the first block lacks: absent
    assert "acc" in joined.absent and joined.absent["acc"][:3].tolist() == [False, False, True]
