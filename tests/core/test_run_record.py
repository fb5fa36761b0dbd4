"""The run record's pieces without TensorFlow: output.log's bound, events.jsonl's lines
(a torn last line skipped), the system sampler's figures (issue 56)."""

from __future__ import annotations

import math
import threading

from tfstudio.core.events import (
    Advice,
    CheckpointDeleted,
    CheckpointList,
    CheckpointSaved,
    NonFinite,
    Notice,
    SystemSampled,
)
from tfstudio.core.gpu import GpuSample
from tfstudio.core.output_log import OutputLog, left_out_line
from tfstudio.core.run_record import EVENTS_LOG, event_line, read_run_record
from tfstudio.core.system import SystemSampling


def test_output_log_keeps_the_head_and_the_tail_with_one_line_for_what_was_left_out(tmp_path):
    log = OutputLog(head_chars=100, tail_chars=300)
    lines = [f"line {i:04d}\n" for i in range(500)]  # 10 characters each
    log.write("".join(lines[:5]))  # before the folder is known: kept in memory
    path = tmp_path / "output.log"
    log.open(path)
    assert path.read_text() == "".join(lines[:5])
    for n, line in enumerate(lines[5:], 6):
        log.write(line)
        so_far = "".join(lines[:n])
        text = path.read_text()  # mid-run, at any moment: the head, the newest text, bounded
        assert text.startswith(so_far[:100]) and text.endswith(so_far[-300:])
        assert len(text) <= 100 + len(left_out_line(len(so_far))) + 2 * 300
        if n == 71:  # past head + twice the tail: rewritten as head, left-out line, tail
            assert text == so_far[:100] + left_out_line(310) + so_far[-300:]
    log.close()
    whole = "".join(lines)
    expected = whole[:100] + left_out_line(len(whole) - 400) + whole[-300:]
    assert path.read_text() == expected == log.text()
    log.write("after close\n")  # ignored, never raises
    assert path.read_text() == expected


def test_output_log_that_cannot_be_written_says_so_once_and_keeps_what_it_wrote(tmp_path):
    notes = []
    log = OutputLog(on_error=notes.append)
    log.open(tmp_path / "output.log")
    log.write("first\n")
    log._file.close()  # the file goes away under it: every later write fails
    log.write("second\n")
    log.write("third\n")
    log.close()
    assert len(notes) == 1 and "no longer recorded" in notes[0]
    assert (tmp_path / "output.log").read_text() == "first\n"


def test_events_log_lines_read_back_as_the_events_and_a_torn_last_line_is_skipped(tmp_path):
    saved = CheckpointSaved("/ck/ckpt-1", 3, 1.5, 0.25, 1e9, 0.01, True)
    events = [
        saved,
        CheckpointList("/ck", (saved,)),
        Advice("rule", "title", "message", "fix", "train.py", 7),
        NonFinite(9, math.nan, "dense", "", "", "recomputed", "stop"),
        Notice("tfstudio", "a note"),
        CheckpointDeleted("/ck/ckpt-1"),
    ]
    text = "".join(event_line(e, 1e9 + i) for i, e in enumerate(events))
    (tmp_path / EVENTS_LOG).write_text(text + '{"type": "Notice", "kind": "torn')
    record = read_run_record(tmp_path)
    assert [repr(e) for e in record.events] == [repr(e) for e in events]
    assert record.events[:3] == events[:3] and record.events[4:] == events[4:]
    assert record.event_walls == [1e9 + i for i in range(len(events))]
    assert record.checkpoints == []  # saved, then deleted
    assert record.checkpoint_events == [events[0], events[1], events[5]]
    assert [type(n) for n in record.notices] == [Advice, NonFinite, Notice]
    assert math.isnan(record.notices[1].loss)
    assert len(record.problems) == 1 and "cut short" in record.problems[0]
    assert record.console == "" and record.system == {}


class _Gpus:
    def read(self, pids):
        return (GpuSample(0, "GPU", 42.0, 3 * 2**30, 80 * 2**30, 2**30),)

    def close(self):
        pass


def test_the_system_sampler_emits_float32_figures_of_this_process_the_machine_and_gpus():
    got: list[SystemSampled] = []
    two = threading.Event()

    def emit(event):
        got.append(event)
        if len(got) >= 2:
            two.set()

    with SystemSampling(emit, lambda: 1.5, lambda: 12, interval=0.05, gpu_reader=_Gpus()):
        assert two.wait(30)
    first = got[0]
    assert (first.time, first.global_step) == (1.5, 12)
    assert first.values["gpu0/utilization_percent"] == 42.0
    assert first.values["gpu0/process_memory_bytes"] == 2**30
    assert first.values["process/rss_bytes"] > 2**20
    assert first.values["machine/memory_total_bytes"] >= first.values["machine/memory_used_bytes"]
    import numpy as np

    for event in got:  # as the event file keeps them: read back equal
        assert all(v == float(np.float32(v)) for v in event.values.values())


def test_events_log_is_bounded_with_one_last_line_saying_so(tmp_path, monkeypatch):
    import tfstudio.engine.recorder as recorder

    monkeypatch.setattr(recorder, "EVENTS_LOG_LINES", 5)
    log = recorder.EventsLog(tmp_path / EVENTS_LOG, None)
    for i in range(20):
        log.write(event_line(Notice("retracing", f"note {i}"), 1e9))
    log.close()
    record = read_run_record(tmp_path)
    assert [n.text for n in record.notices[:5]] == [f"note {i}" for i in range(5)]
    assert len(record.notices) == 6
    assert (
        record.notices[5].text
        == "events.jsonl holds 5 lines at most: later checkpoints and notices are not recorded"
    )
