"""OpenToM (Xu et al., 2024): the per-genre files of `data/opentom_data/`.

`meta_data.json` maps an 8-digit story key to the story (`narrative`) and its generation fields;
each question file maps the same key to a list of {question, answer, type}. The file name says
the genre and the order: `location_cg_*` coarse (is it still where it was? yes/no),
`location_fg_*_new` fine (where exactly? free text), `multihop_*` (fullness / accessibility
change, a three-way choice), `attitude` (positive / neutral / negative), `_fo` first order and
`_so` second order. Questions asked "from narrator's perspective" are about the world, not a
mind: belief order 0 (reality for "by the end", memory for "in the beginning", noted in meta).

The release also carries the superseded `location_fg_fo.json` / `location_fg_so.json`; they are
read only when their `_new` replacement is absent. `meta_data_long.json` (OpenToM-L) is not read.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from tomforge.schemas.record import UNSPLIT, build_record
from tomforge.warehouse.sources.base import (
    Adapter,
    RecordError,
    RecordOrReject,
    Reject,
    SourceError,
    read_json,
    relative_name,
)

NAME = "opentom"
META_FILES = ("meta_data.json", "metadata.json")  # the Hub copy renamed it; the GitHub one did not
DATA_FOLDER = "opentom_data"
YES_NO = ["yes", "no"]
ATTITUDE_OPTIONS = ["positive", "neutral", "negative"]
FULLNESS_OPTIONS = ["more full", "equally full", "less full"]
ACCESSIBILITY_OPTIONS = ["more accessible", "equally accessible", "less accessible"]


@dataclass(frozen=True)
class QuestionFile:
    """What a question file's name tells: genre, order, location granularity."""

    name: str
    genre: str
    order: int
    granularity: str | None = None
    superseded_by: str | None = None


QUESTION_FILES: tuple[QuestionFile, ...] = (
    QuestionFile("location_cg_fo.json", "location", 1, "coarse"),
    QuestionFile("location_cg_so.json", "location", 2, "coarse"),
    QuestionFile("location_fg_fo_new.json", "location", 1, "fine"),
    QuestionFile("location_fg_so_new.json", "location", 2, "fine"),
    QuestionFile("location_fg_fo.json", "location", 1, "fine", superseded_by="location_fg_fo_new.json"),
    QuestionFile("location_fg_so.json", "location", 2, "fine", superseded_by="location_fg_so_new.json"),
    QuestionFile("multihop_fo.json", "multihop", 1),
    QuestionFile("multihop_so.json", "multihop", 2),
    QuestionFile("attitude.json", "attitude", 1),
)
_BY_NAME = {spec.name: spec for spec in QUESTION_FILES}
_PERSPECTIVE = re.compile(r"^\s*From (?:the )?(?P<who>.+?)(?:'s|’s|') perspective,", re.IGNORECASE)
_AS_AGENT = re.compile(r"^\s*As (?P<who>[^,]+),")
_NAME = r"[A-Z][\w'’-]*(?: [A-Z][\w'’-]*)*"
_INNER = re.compile(rf"\bdoes (?P<a>{_NAME}) think\b|\bchange for (?P<b>{_NAME})\b")


def perspective_chain(question: str, order: int) -> list[str]:
    """["X"] for "From X's perspective, ...", ["X", "Y"] when it asks what Y thinks; [] for the narrator."""
    outer = _PERSPECTIVE.match(question) or _AS_AGENT.match(question)
    if outer is None:
        return []
    who = outer["who"].strip()
    if who.casefold() == "narrator":
        return []
    chain = [who]
    if order >= 2:
        inner = _INNER.search(question, outer.end())
        if inner is not None and (inner["a"] or inner["b"]) != who:
            chain.append(inner["a"] or inner["b"])
    return chain


def narrator_probe(question: str) -> str | None:
    """For narrator questions: "memory" (where it was at first) or "reality" (where it is now)."""
    if not re.match(r"^\s*From (?:the )?narrator(?:'s|’s|') perspective", question, re.IGNORECASE):
        return None
    return "memory" if re.search(r"\bin the beginning\b|\binitial(?:ly)?\b", question, re.IGNORECASE) else "reality"


class OpenTomAdapter(Adapter):
    """Reads the `opentom_data` folder (or its parent, or one of its question files)."""

    def read(self, root: Path) -> Iterator[RecordOrReject]:
        root = Path(root)
        folder, files = self._layout(root)
        stories = self._stories(folder)
        for path in files:
            yield from self._read_questions(path, relative_name(path, root), stories)

    def count_input(self, root: Path) -> int:
        """Questions in the input, counted apart from the parser: the length of every story's list
        in each question file read (a value that is not a list counts one: it becomes one reject)."""
        _folder, files = self._layout(Path(root))
        return sum(
            len(value) if isinstance(value, list) else 1
            for path in files
            for value in json.loads(path.read_text(encoding="utf-8")).values()
        )

    def _layout(self, root: Path) -> tuple[Path, list[Path]]:
        """The data folder and the question files to read, in a fixed order."""
        if not root.exists():
            raise SourceError(root, "path not found")
        if root.is_file():
            if root.name in META_FILES:
                return root.parent, self._question_files(root.parent)
            if root.name not in _BY_NAME:
                known = ", ".join(spec.name for spec in QUESTION_FILES if spec.superseded_by is None)
                raise SourceError(root, f"not an OpenToM file; expected meta_data.json or one of {known}")
            return root.parent, [root]
        folder = root
        if not self._question_files(root) and (root / DATA_FOLDER).is_dir():
            folder = root / DATA_FOLDER
        files = self._question_files(folder)
        if not files:
            raise SourceError(folder, "no OpenToM question files (location_*, multihop_*, attitude.json) here")
        return folder, files

    @staticmethod
    def _question_files(folder: Path) -> list[Path]:
        present = {spec.name for spec in QUESTION_FILES if (folder / spec.name).is_file()}
        return [
            folder / spec.name
            for spec in QUESTION_FILES
            if spec.name in present and (spec.superseded_by is None or spec.superseded_by not in present)
        ]

    @staticmethod
    def _stories(folder: Path) -> dict[str, Any]:
        path = next((folder / name for name in META_FILES if (folder / name).is_file()), None)
        if path is None:
            raise SourceError(
                folder / META_FILES[0], "missing: OpenToM stories live in meta_data.json next to the question files"
            )
        data = read_json(path)
        if not isinstance(data, dict) or (data and not any(isinstance(story, dict) for story in data.values())):
            raise SourceError(path, "expected an object mapping story keys to story objects")
        return data

    def _read_questions(self, path: Path, label: str, stories: dict[str, Any]) -> Iterator[RecordOrReject]:
        spec = _BY_NAME[path.name]
        data = read_json(path)
        if not isinstance(data, dict) or (data and not any(isinstance(value, list) for value in data.values())):
            raise SourceError(path, "expected an object mapping story keys to lists of questions")
        for key, questions in data.items():
            if not isinstance(questions, list):
                yield _reject(f"{label}#{key}", label, "(record)", "expected a list of questions", questions)
                continue
            for index, qa in enumerate(questions):
                ref = f"{label}#{key}/{index}"
                try:
                    yield _build(spec, key, index, qa, stories, ref)
                except RecordError as problem:
                    yield _reject(ref, label, problem.field, problem.reason, qa)


def _build(spec: QuestionFile, key: str, index: int, qa: Any, stories: dict[str, Any], ref: str) -> dict[str, Any]:
    """One unified record for one question (raises RecordError when it cannot be one)."""
    if not isinstance(qa, dict):
        raise RecordError("(record)", f"expected a question object, got {type(qa).__name__}")
    story = stories.get(key)
    if story is None:
        raise RecordError("key", f"story key {key!r} is not in meta_data.json")
    if not isinstance(story, dict) or not isinstance(story.get("narrative"), str) or not story["narrative"].strip():
        raise RecordError("narrative", f"story {key!r} in meta_data.json has no narrative text")
    question = qa.get("question")
    if not isinstance(question, str) or not question.strip():
        raise RecordError("question", f"expected a non-empty string, got {question!r}"[:200])
    raw_answer = qa.get("answer")
    if not isinstance(raw_answer, str) or not raw_answer.strip():
        raise RecordError("answer", f"expected a non-empty string, got {raw_answer!r}"[:200])

    probe = narrator_probe(question)
    order = 0 if probe else spec.order
    answer_fields = _answer_fields(spec, question, raw_answer)
    meta: dict[str, Any] = {key_: value for key_, value in story.items() if key_ != "narrative"}
    meta.update({name: value for name, value in qa.items() if name not in ("question", "answer")})
    meta.update(story_key=key, question_file=spec.name, source_order=spec.order)
    if spec.granularity:
        meta["location_granularity"] = spec.granularity
    if probe:
        meta["narrator_probe"] = probe
    if answer_fields["answer"] != raw_answer:
        meta["raw_answer"] = raw_answer
    return build_record(
        source=NAME,
        source_version=ADAPTER.version,
        source_key=f"{spec.name}/{key}/{index}",
        source_ref=ref,
        split=UNSPLIT,
        context_kind="story",
        context=story["narrative"],
        n_agents=_n_agents(story),
        n_events=_n_events(story),
        question=question,
        question_type=spec.genre,
        belief_order=order,
        perspective_chain=perspective_chain(question, order),
        meta=meta,
        **answer_fields,
    )


def _answer_fields(spec: QuestionFile, question: str, raw: str) -> dict[str, Any]:
    """Answer format, options and normalized answer for a genre."""
    answer = raw.strip()
    if spec.genre == "location" and spec.granularity == "fine":
        return {"answer_format": "free_text", "answer": answer}
    if spec.genre == "location":
        options = YES_NO
    elif spec.genre == "attitude":
        options = ATTITUDE_OPTIONS
    else:
        options = _multihop_options(question, answer)
    answer = answer.lower()
    if answer not in options:
        raise RecordError("answer", f"expected one of {', '.join(options)}, got {raw!r}"[:200])
    if options is YES_NO:
        return {"answer_format": "yes_no", "answer": answer, "options": list(YES_NO)}
    return {"answer_format": "multiple_choice", "answer": answer, "options": list(options)}


def _multihop_options(question: str, answer: str) -> list[str]:
    text = question.lower()
    if "fullness" in text or answer.lower().endswith("full"):
        return FULLNESS_OPTIONS
    if "accessib" in text or answer.lower().endswith("accessible"):
        return ACCESSIBILITY_OPTIONS
    raise RecordError("question", "multihop question about neither fullness nor accessibility")


def _n_agents(story: dict[str, Any]) -> int | None:
    info = story.get("plot_info")
    if not isinstance(info, dict):
        return None
    names = {info.get(role) for role in ("mover", "observer")}
    return len({name for name in names if isinstance(name, str) and name.strip()}) or None


def _n_events(story: dict[str, Any]) -> int | None:
    """Lines of the plot skeleton the narrative was written from (one event per line)."""
    plot = story.get("plot")
    return sum(1 for line in plot.splitlines() if line.strip()) if isinstance(plot, str) else None


def _reject(ref: str, file: str, field_name: str, reason: str, raw: Any) -> Reject:
    return Reject(NAME, ref, file, ref.partition("#")[2], field_name, reason, Reject.raw_of(raw))


ADAPTER = OpenTomAdapter(
    name=NAME,
    version="seacowx/OpenToM@3f22b66-v2",
    license="CC BY-NC 4.0 (not for training)",
    hub_repo="SeacowX/OpenToM",
    hub_patterns=[f"{DATA_FOLDER}/*.json"],
)
