"""The learning gate (issue 37): did a model learn the task it was trained on, before anything compares it?

A model's accuracy on items it was never trained on says something only once it has learned what it *was*
trained on. The gate is its accuracy on **held-out items of the belief orders, answer formats (forms),
renderings and sources it was trained on**: items of the evaluated sets whose combination (source,
belief_order, answer_format, rendering) is one the training rows held (`rl.trained_on`, the record's `cells`)
and whose item was not itself trained on (the record's `item_ids`; for records without them, items of the
training split by name). At or above `LEARNING_GATE` the model **learned**; below it, it **did not learn**, and
no comparison may use it (`tomforge eval`'s blocks print "—, did not learn"; the experiment reports print
"not compared: <arm> did not learn"). A model without a training record (a Hub id, a .gguf, a base model) or
with a record older than the orders and forms is "unknown"; a record whose combinations no evaluated held-out
item has is "not measured".

API (what `tomforge eval`, the experiment reports and the scaling report call):

    LEARNING_GATE = 0.90                          # the one threshold; `tomforge eval --gate X` overrides it
    learning_gate(rows, record, threshold=LEARNING_GATE) -> Gate
        rows:   eval rows (dicts) as `rl.evaluate.evaluate` returns them or `eval_results` stores them; read:
                `source`, `belief_order`, `answer_format`, `rendering` (absent: None), `item_id`, `correct`,
                `chance` (absent or None: left out of the chance), `config`, `split`. Pass one model's rows.
        record: the training record (`rl.trained_on.read_training_record(model)`, or `training_record(...)`
                built from the training split), or None.
        Gate:   .status ("learned" | "did not learn" | "not measured" | "unknown"), .accuracy, .n, .chance
                (mean chance of the gated items), .threshold, .passed (True / False / None when not measured or
                unknown), .as_dict() -> {accuracy, n, chance, threshold, passed, status}, .line(label) (one line).
    matches_training(row, record) -> bool         # one row counts for the gate
    chances(items) -> list[float | None]          # each item's chance accuracy (below)
    item_chance(answer_format, options) -> float | None
    chance_table(rows) -> list[dict]              # per set and format: n, accuracy, chance

**Chance per format** (the accuracy of a guesser that knows the format and the set, not the story):
- multiple choice: 1 / len(options) (a uniform pick; the generator balances the gold's position, so the best
  constant letter does no better on its sets);
- yes / no: 0.5;
- list ("who knows where the apple is?"): the reward wants the exact set, so a uniform guess over the subsets
  of the k candidates (the item's options, the story's agents) is right with probability 1 / 2^k. That is tiny,
  and one constant answer is not: "all of them". So a list item's chance is the larger of 1 / 2^k and the share
  of the set's list items whose gold is every candidate (what always listing everyone scores);
- free text: 1 / len(options) when the item has options. Else the larger of two guessers: the best constant
  answer's rate among the golds of that set (always answering the most frequent gold, compared normalized as the
  reward compares; a story-specific answer, a container's name, rarely repeats, so this is small: 0.12 on the
  controlled orders 0-3 set), and, where the item carries its world (`ground_truth.world`, whose setup lists the
  story's containers), a uniform pick among the story's containers, 1 / len(containers) (0.25 there): a model
  that names any place of the story is otherwise read as far above chance;
- any other format: None (not counted in a chance).
A set's chance is the mean of its items' chances (the expected accuracy of that guesser on the set).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

LEARNING_GATE = 0.90
"""The gate: accuracy on held-out items of the trained orders, forms and renderings at or above this."""
LEARNED, DID_NOT_LEARN, NOT_MEASURED, UNKNOWN = "learned", "did not learn", "not measured", "unknown"
NOT_LEARNED_CELL = "—, did not learn"  # what a comparison prints in place of a difference involving such a model


def _options(value: Any) -> list[Any]:
    return [] if value is None else list(value)


def item_chance(answer_format: str | None, options: Sequence[Any] | None) -> float | None:
    """The chance accuracy of one item from its format and options alone (free text without options and the
    list format's constant guess need the whole set: `chances`)."""
    n = len(_options(options))
    if answer_format == "multiple_choice":
        return 1.0 / n if n else None
    if answer_format == "yes_no":
        return 0.5
    if answer_format == "list":
        return 1.0 / 2**n if n else None
    if answer_format == "free_text":
        return 1.0 / n if n else None
    return None


def _norm(text: Any) -> str:
    from tomforge.rl.reward import normalize

    return normalize(str(text))


def _gold_list(item: dict[str, Any]) -> list[Any]:
    listed = item.get("answer_list")
    if listed is not None:
        return list(listed)
    from tomforge.rl.reward import split_list

    return split_list(str(item.get("answer") or ""))


def _places(item: dict[str, Any]) -> int:
    """How many containers the item's world sets up (0 when it carries no world)."""
    world = item.get("world")
    if not isinstance(world, dict):
        return 0
    setup = next((e for e in world.get("trace") or [] if e.get("kind") == "setup"), None)
    return len((setup or {}).get("containers") or [])


def chances(items: Sequence[dict[str, Any]]) -> list[float | None]:
    """Each item's chance accuracy (module docstring), the items being one set: dicts with `answer_format`,
    `options`, `answer` (the gold text), for lists `answer_list`, and optionally `world` (as the ground truth
    carries it: `schemas.rl.columns.decode_ground_truth`)."""
    out = [item_chance(item.get("answer_format"), item.get("options")) for item in items]
    free = [i for i, item in enumerate(items) if item.get("answer_format") == "free_text" and out[i] is None]
    if free:
        counts = Counter(_norm(items[i].get("answer")) for i in free)
        best = counts.most_common(1)[0][1] / len(free)
        for i in free:
            places = _places(items[i])
            out[i] = max(best, 1.0 / places) if places else best
    lists = [i for i, item in enumerate(items) if item.get("answer_format") == "list"]
    if lists:
        everyone = sum(
            bool(_options(items[i].get("options")))
            and {_norm(a) for a in _gold_list(items[i])} == {_norm(o) for o in _options(items[i].get("options"))}
            for i in lists
        ) / len(lists)
        for i in lists:
            out[i] = max(out[i] or 0.0, everyone)
    return out


def mean_chance(rows: Iterable[dict[str, Any]]) -> float | None:
    """The mean of the rows' `chance` (rows without one left out); None when none has one."""
    known = [float(r["chance"]) for r in rows if r.get("chance") is not None]
    return round(sum(known) / len(known), 4) if known else None


def chance_table(
    rows: Iterable[dict[str, Any]], column: Callable[[dict[str, Any]], str] | None = None
) -> list[dict[str, Any]]:
    """Per model, set and format: n, accuracy and chance, sorted. The set is `column(row)` (`tomforge eval` passes
    its matrix column, `config/split[:rendering] (distribution)`), by default `config/split (distribution)`."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        where = column(r) if column else f"{r['config']}/{r['split']} ({r.get('distribution', 'held_out')})"
        groups.setdefault((str(r.get("label", "")), where, str(r.get("answer_format"))), []).append(r)
    return [
        {
            "label": label,
            "set": where,
            "format": form,
            "n": len(items),
            "accuracy": round(sum(bool(r["correct"]) for r in items) / len(items), 4),
            "chance": mean_chance(items),
        }
        for (label, where, form), items in sorted(groups.items())
    ]


def format_chance_table(table: list[dict[str, Any]]) -> str:
    """The chance table as plain text, one line per model, set and format."""
    if not table:
        return ""
    lines = ["accuracy and chance per format: model | set | format | n | accuracy | chance"]
    for row in table:
        chance = "-" if row["chance"] is None else f"{row['chance']:.3f}"
        lines.append(f"{row['label']} | {row['set']} | {row['format']} | {row['n']} | {row['accuracy']:.3f} | {chance}")
    return "\n".join(lines)


def _cells(record: dict[str, Any]) -> set[tuple[Any, ...]] | None:
    """The (source, order, form, rendering) combinations trained on; None for a record without them."""
    cells = record.get("cells")
    if cells is None:
        return None
    return {(c[0], None if c[1] is None else int(c[1]), c[2], c[3]) for c in cells}


def _cell_of(row: dict[str, Any]) -> tuple[Any, ...]:
    order = row.get("belief_order")
    return (row.get("source"), None if order is None else int(order), row.get("answer_format"), row.get("rendering"))


def _in_training(row: dict[str, Any], record: dict[str, Any], trained_ids: set[str] | None) -> bool:
    if trained_ids is not None:
        return str(row.get("item_id")) in trained_ids
    train = str(record.get("train") or "").partition(":")[0]
    return bool(train) and f"{row.get('config')}/{row.get('split')}" == train


def matches_training(row: dict[str, Any], record: dict[str, Any], *, _ids: set[str] | None = None) -> bool:
    """Whether an eval row counts for the gate: its combination was trained on and its item was not."""
    cells = _cells(record)
    if cells is None or _cell_of(row) not in cells:
        return False
    ids = _ids if _ids is not None else (set(record["item_ids"]) if record.get("item_ids") is not None else None)
    return not _in_training(row, record, ids)


@dataclass(frozen=True)
class Gate:
    status: str
    accuracy: float | None
    n: int
    chance: float | None
    threshold: float
    passed: bool | None
    what: str = ""  # the trained orders, forms and renderings, for the printed line

    @property
    def learned(self) -> bool:
        return self.passed is True

    @property
    def did_not_learn(self) -> bool:
        return self.passed is False

    def as_dict(self) -> dict[str, Any]:
        return {
            "accuracy": self.accuracy,
            "n": self.n,
            "chance": self.chance,
            "threshold": self.threshold,
            "passed": self.passed,
            "status": self.status,
        }

    def line(self, label: str) -> str:
        head = f"learning gate {label}"
        if self.status == UNKNOWN:
            return f"{head}: unknown (no training record with its orders, forms and renderings)"
        if self.status == NOT_MEASURED:
            return f"{head}: no held-out items of the trained orders/forms/renderings: gate not measured ({self.what})"
        chance = "-" if self.chance is None else f"{self.chance:.3f}"
        verdict = "LEARNED" if self.passed else "DID NOT LEARN"
        sign = ">=" if self.passed else "<"
        return (
            f"{head}: held-out items of the trained {self.what}: {self.accuracy:.3f} (n={self.n}, chance {chance}) "
            f"{sign} {self.threshold:.2f}: {verdict}"
        )


def describe(record: dict[str, Any]) -> str:
    """'orders 0-3, forms free_text/multiple_choice, renderings third_person' for the printed line."""
    orders = [o for o in record.get("orders") or [] if o is not None]
    if orders and orders == list(range(min(orders), max(orders) + 1)) and len(orders) > 1:
        order_text = f"{min(orders)}-{max(orders)}"
    else:
        order_text = ",".join(str(o) for o in record.get("orders") or []) or "none"
    renderings = "/".join(record.get("renderings") or []) or "none"
    return f"orders {order_text}, forms {'/'.join(record.get('forms') or [])}, renderings {renderings}"


def learning_gate(
    rows: Iterable[dict[str, Any]], record: dict[str, Any] | None, threshold: float = LEARNING_GATE
) -> Gate:
    """The gate of one model (module docstring): its accuracy on the rows that `matches_training`, each item
    counted once (an item evaluated in two sets or twice counts once, its first row), against `threshold`."""
    if record is None or _cells(record) is None:
        return Gate(UNKNOWN, None, 0, None, threshold, None)
    ids = set(record["item_ids"]) if record.get("item_ids") is not None else None
    seen: set[tuple[Any, Any]] = set()
    kept = []
    for row in rows:
        key = (row.get("item_id"), row.get("rendering"))
        if key in seen or not matches_training(row, record, _ids=ids if ids is not None else None):
            continue
        seen.add(key)
        kept.append(row)
    what = describe(record)
    if not kept:
        return Gate(NOT_MEASURED, None, 0, None, threshold, None, what)
    exact = sum(bool(r["correct"]) for r in kept) / len(kept)
    passed = exact >= threshold  # the exact share: 0.89996 printed as 0.9000 has not passed 0.90
    return Gate(
        LEARNED if passed else DID_NOT_LEARN, round(exact, 4), len(kept), mean_chance(kept), threshold, passed, what
    )
