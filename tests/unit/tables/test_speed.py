"""A training's speed in the tables (`xlsent.tables.speed`): the median of its log lines."""

import json

from xlsent.tables.speed import log_speed, training_speed


def test_a_trainings_speed_is_the_median_of_its_log_lines_a_torn_one_left_out(tmp_path):
    """The live log of a killed job may end in a torn line: its speed is in the lines before.
    Tokens/s 800 (warming up), 1,000 and 1,100: median 1,000; MFU 0.10, 0.30, 0.35: 30 %."""
    log = tmp_path / "train_log.jsonl"
    speeds = [(50, 800.0, 0.10), (100, 1000.0, 0.30), (150, 1100.0, 0.35)]
    lines = [json.dumps({"step": s, "tokens_per_s": t, "mfu": m}) for s, t, m in speeds]
    lines.insert(2, json.dumps({"step": 100, "dev_p1": 80.0}))  # an evaluation: no speed
    log.write_text("\n".join(lines) + '\n{"step": 200, "tokens_per_s": 9')
    assert log_speed(log) == {"tokens_per_s": 1000.0, "mfu_pct": 30.0}
    assert training_speed([{"step": 1, "tokens_per_s": 5.0, "mfu": None}]) == {
        "tokens_per_s": 5.0,
        "mfu_pct": None,  # a CPU: no peak, no MFU
    }
