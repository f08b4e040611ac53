"""One table of training options (#53 item 5) drives attn train and attn.train alike: every row is
a flag of attn train (in --help's group for the tasks that take it) and a keyword of attn.train;
an option given to a task that does not take it is one usage error naming the tasks that do, on
the command line and from Python; the defaults are each task's, the same from both (the same
model file, and the run's record holds the table's values)."""
import json
import os
import re
import struct
import subprocess

import pytest

attn = pytest.importorskip("attn")

DATA = os.path.join(os.path.dirname(__file__), "..", "data")
ATTN = os.environ.get("ATTN_BIN") or os.path.join(os.path.dirname(__file__), "..", "..", "build", "bin", "attn")
NEGATION = os.path.join(DATA, "negation_train.tsv")
TASKS = ["next-word", "classify", "masked-word", "lm", "translate"]
PAIRS = os.path.join(DATA, "toy_pairs.tsv")
# A value every option of the kind accepts (within each row's range), as text and from Python.
VALUES = {"integer": ("2", 2), "number": ("0.5", 0.5), "flag": (None, True), "path": ("somewhere.txt", "somewhere.txt"),
          "seed": ("1", 1), "duration": ("1m", "1m"), "cuts": ("2", [2]), "pool": ("mean", "mean"),
          "dtype": ("bf16", "bf16"), "device": ("cuda", "cuda")}


def table():
    return attn._attn._train_options()


def first_flag(row):
    return row["flag"].split(",")[0]


def cli_names(tasks):
    return "--task " + (tasks[0] if len(tasks) == 1 else ", ".join(tasks[:-1]) + " and " + tasks[-1])


def python_names(tasks):
    quoted = [f"'{t}'" for t in tasks]
    return "task=" + (quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1])


def run(*args):
    return subprocess.run([ATTN, *map(str, args)], capture_output=True, text=True)


def help_groups():
    """attn train --help: each group's heading → the flags listed under it, in order."""
    groups, current = {}, None
    for line in run("train", "--help").stdout.splitlines():
        if line and not line.startswith(" ") and line.endswith(":"):
            current = line[:-1]
            groups[current] = []
        elif current is not None and line.startswith("  -"):
            groups[current] += line.split()[0].split("{")[0].split(",")
    return groups


def test_the_table_covers_every_task_and_names_each_option_once():
    rows = table()
    assert len({r["keyword"] for r in rows}) == len(rows)
    assert len({first_flag(r) for r in rows}) == len(rows)
    for r in rows:
        assert r["tasks"] and set(r["tasks"]) <= set(TASKS), r


def test_help_lists_every_flag_in_the_group_of_its_tasks():
    groups = help_groups()
    headings = list(groups)
    assert headings[0] == "Options", headings  # the options every task takes come first
    for heading in headings[1:]:
        assert heading.startswith("Options for --task "), heading
    for r in table():
        if r["surface"] == "python":
            continue
        heading = "Options" if r["tasks"] == TASKS else "Options for " + cli_names(r["tasks"])
        assert heading in groups, (r, headings)
        assert r["flag"].split(",")[0] in groups[heading], (r, groups[heading])
    # No task-named prefix is left in front of a flag's help: its group says it.
    out = run("train", "--help").stdout
    assert not re.search(r"\s{2,}(masked-word, lm|masked-word|lm): ", out), out


@pytest.mark.parametrize("row", table(), ids=lambda r: r["keyword"])
def test_every_row_is_a_keyword_of_attn_train(row):
    if row["surface"] == "cli":
        with pytest.raises(attn.UsageError, match=f"unknown option '{row['keyword']}'"):
            attn.train(NEGATION, progress=False, **{row["keyword"]: 1})
        return
    # A value of no kind: the keyword is known, and its conversion says what it takes.
    with pytest.raises(attn.UsageError, match=f"option {row['keyword']} takes"):
        attn.train(NEGATION, task=row["tasks"][0], progress=False, **{row["keyword"]: object()})


def not_taking():
    return [(r, task) for r in table() for task in TASKS if task not in r["tasks"]]


@pytest.mark.parametrize("row, task", not_taking(), ids=lambda x: x["keyword"] if isinstance(x, dict) else x)
def test_an_option_the_task_does_not_take_is_one_usage_error_naming_the_tasks_that_do(row, task, tmp_path):
    text, value = VALUES[row["kind"]]
    if row["surface"] != "python":
        flag = first_flag(row)
        args = [flag] if text is None else [flag, text]
        r = run("train", "--task", task, "--data", NEGATION, *args, "-o", tmp_path / "m.safetensors")
        assert r.returncode == 1, r.stderr
        assert r.stderr.splitlines()[0] == f"error: {flag} is for {cli_names(row['tasks'])}", r.stderr
        assert not (tmp_path / "m.safetensors").exists()
    if row["surface"] != "cli":
        with pytest.raises(attn.UsageError) as caught:
            attn.train(NEGATION, task=task, progress=False, **{row["keyword"]: value})
        assert str(caught.value).endswith(f"{row['keyword']} is for {python_names(row['tasks'])}"), str(caught.value)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    words = "the cat dog bird sat ran on near by mat road barn garden .".split()
    lines = [" ".join(words[(i * 7 + j * 3) % len(words)] for j in range(9)) for i in range(200)]
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def training_record(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    return json.loads(json.loads(b[8:8 + n])["__metadata__"]["training"])


# The smallest runs of each task; a few options only, every other one at its default.
RUNS = {"next-word": (os.path.join(DATA, "seed003_toy.txt"), {"epochs": 2}),
        "classify": (NEGATION, {"epochs": 1}),
        "masked-word": (None, {"layers": 1, "max_tokens": 2000}),
        "lm": (None, {"layers": 1, "max_tokens": 2000, "vocab": 50, "context": 16}),
        "translate": (PAIRS, {"epochs": 1, "layers": 1, "dim": 16, "feedforward": 32, "pieces": 60})}


@pytest.mark.parametrize("task", TASKS)
def test_the_defaults_are_the_tables_and_the_same_from_both(task, corpus, tmp_path):
    data, options = RUNS[task]
    data = data or corpus
    flags = [x for k, v in options.items() for x in (first_flag(next(r for r in table() if r["keyword"] == k)), v)]
    cli_model, py_model = tmp_path / "cli.safetensors", tmp_path / "py.safetensors"
    r = run("train", "--task", task, "--data", data, *flags, "--threads", 2, "-o", cli_model)
    assert r.returncode == 0, r.stderr
    attn.train(data, task=task, output=py_model, threads=2, progress=False, **options)
    assert cli_model.read_bytes() == py_model.read_bytes()
    record = training_record(cli_model)
    checked = 0
    for row in table():
        key = "time" if row["keyword"] == "time" else row["keyword"]
        if key in options or key not in record or key == "epochs" or row["defaults"][task] is None:
            continue
        assert record[key] == pytest.approx(row["defaults"][task]), (task, key, record[key], row["defaults"][task])
        checked += 1
    assert checked >= 8, record
