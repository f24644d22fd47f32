"""The claims a reasoning text makes about a story: the grammar the process reward checks.

A text is cut into clauses (at `.`, `;`, `!`, `?`, new lines, and before `so`, `because`, `but`,
`therefore`); each clause is matched, after lower-casing and reading `_` as a space, against the
patterns below, with the story's own agents, object and containers (`Vocabulary`). A clause that
matches none is not a claim (it is neither rewarded nor penalized). NAME is an agent of the story;
OBJ is "the <object>" or "it"; PLACE is "[the] <container>" (a place the story does not have still
makes a belief claim, a wrong one). A clause may start with a time: "Line N:" / "after line N"
(the event is the one on that line), "at the start" / "at first" / "initially", "in the end" /
"finally" / "at the end"; connectives ("so", "then", "now", "still", "order N:") are skipped.

- belief: `[according to NAME,] (NAME (thinks|believes|knows|assumes|expects) [that])* OBJ is
  [still|now|really|actually] (in|inside|on|at) PLACE`, or `NAME will (look|search) for OBJ in PLACE`
  (no NAME: where the object really is);
- event: `NAME (moves|moved|puts|put|places|placed|relocates|relocated|transfers|transferred) OBJ
  (to|in|into|on) PLACE`; `OBJ (starts|started|begins|began) in PLACE`; `NAME (enters|entered|comes
  back|came back|returns|returned) and (sees|saw|finds|found) OBJ in PLACE`; `NAME [privately|
  publicly] (tells|told|says|said|claims|claimed|announces|announced) [to] [everyone|NAME [and
  NAME]] [that] OBJ is in PLACE`; `NAME (saw|sees|watched|witnessed) NAME (move|moves|put|puts)
  OBJ (to|in|into) PLACE` is the event plus "the first NAME perceived it"; `NAME (saw|knows|noticed|heard)
  that <event>` and `NAME (does not|didn't) (know|see|notice|hear) that <event>` are the event plus NAME's
  perception of it (or not);
- perception of the event last named (or named on the clause's line): `NAME [and NAME] (saw|sees|
  heard|hears|witnessed|noticed) (it|this|that)` (perceived); `NAME (did not|didn't) (see|notice|
  hear|witness) (it|this|that)`, `NAME missed it` (not perceived); `NAME (was not|wasn't) (there|
  present|in the room)`, `NAME had (already )?left`, `NAME was (away|gone|outside)` (not in the room); `NAME watched in secret`
  (perceived, not in the room);
- trust: `NAME (trusts|trusted) NAME`, `NAME (does not|doesn't|did not|didn't) trust NAME`;
- steps (the `steps` rationale form): a clause may start with a label, "Event N:", which names the event
  it states; `step N, (reality|the start|NAME( thinks NAME)*): (events|lines) N(, N)*` (or `no events`)
  says which events reach that chain (`kept`; events by label, lines by the story's line numbers; reality:
  every event about the object; the start: the first placement), and sets the chain of the clauses after
  it; `step N, NAME` with N > 1 names the chain of step N-1's first N-1 agents, then NAME; `the last that
  counts, (event|line) N, (puts|shows) OBJ in PLACE` / `... says OBJ is in PLACE` says that event is the
  last that sets that chain's belief, and puts the object in PLACE (`deciding`); `none counts`: no event
  sets it (`none_counts`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Iterable

_SPLIT = re.compile(r"[.;!?\n]+|,?\s+(?=\b(?:so|because|but|therefore|hence)\b)")
_LEAD = re.compile(r"^(?:(?:so|because|but|therefore|hence|then|and|thus|now|still|also|later|order \d+)\b[,:]?\s*)+")
_TIME = re.compile(
    r"^(?:(?:after |at |on |in )?line (?P<line>\d+)|(?P<start>at the start|at the beginning|at first|"
    r"initially|in the beginning)|(?P<end>in the end|at the end|finally|by the end|eventually))"
    r"\b[,:]?\s*"
)
_THINK = r"(?:thinks|believes|knows|assumes|expects|think|believe|would think|will think)"
_MOVE = r"(?:moves|moved|puts|put|places|placed|relocates|relocated|transfers|transferred|moving|putting)"
_TELL = r"(?:tells|told|says|said|claims|claimed|announces|announced|lies|lied|states|stated)"
_SEE = r"(?:saw|sees|heard|hears|witnessed|noticed|watched)"
_LABEL = re.compile(r"^event (?P<label>\d+)[,:]\s*")
_REFS = r"(?P<kind>event|line)s? (?P<refs>\d+(?:(?:,|, and| and) \d+)*)"


@dataclass(frozen=True)
class Vocabulary:
    """The story's names, normalized: what a clause may refer to."""

    agents: tuple[str, ...]
    obj: str
    containers: tuple[str, ...]


@dataclass(frozen=True)
class Claim:
    """One checkable statement. `container` None: a place the story does not have."""

    kind: str  # belief | event | perceived | not_perceived | not_present | secret | trust | distrust
    text: str
    chain: tuple[str, ...] = ()
    container: str | None = None
    agent: str | None = None
    other: str | None = None  # trust: the speaker; "saw NAME move": the mover
    event: str | None = None  # event claims: init | move | reveal | tell
    line: int | None = None
    time: str | None = None  # "start" | "end" | None (the event last named, else the end)
    label: int | None = None  # the text's own number for the event its clause states ("Event N:")
    refs: tuple[int, ...] = ()  # kept / deciding: the events referred to, by label or line
    ref_kind: str | None = None  # "event" (a label) | "line" | None (no events)


def norm(text: str) -> str:
    return " ".join(text.replace("_", " ").replace("\u2019", "'").lower().split())


def _any_of(words: Iterable[str]) -> str:
    """A pattern matching any of `words`, the longest first (so "Ann Lee" wins over "Ann"); one that matches
    nothing when there are none."""
    ordered = sorted(words, key=len, reverse=True)
    return "(?:" + "|".join(re.escape(w) for w in ordered) + ")" if ordered else "(?!x)x"


class _Patterns:
    """The grammar compiled for one story's vocabulary."""

    def __init__(self, vocab: Vocabulary) -> None:
        self.agents = {norm(a): a for a in vocab.agents}
        self.containers = {norm(c): c for c in vocab.containers}
        name = _any_of(self.agents)
        obj = rf"(?:the {re.escape(norm(vocab.obj))}|{re.escape(norm(vocab.obj))}|it)"
        place = r"(?P<place>.+)"
        names = rf"{name}(?:(?:, | and ){name})*"
        self.name = re.compile(name)
        self.belief = re.compile(
            rf"^(?:according to (?P<acc>{name}),? )?(?P<chain>(?:{name} (?:still |also |now )?{_THINK}(?: that)? )*)"
            rf"{obj} (?:is|was|must be|should be|would be|remains|stays) (?:still |now |really |actually |then )*"
            rf"(?:in|inside|on|at) {place}$"
        )
        self.looks = re.compile(rf"^(?P<chain>{name}) will (?:look|search) for {obj} (?:in|inside|on|at) {place}$")
        self.move = re.compile(rf"^(?P<actor>{name}) {_MOVE} {obj} (?:to|in|into|inside|on|onto) {place}$")
        self.saw_move = re.compile(
            rf"^(?P<agent>{name}) (?:saw|sees|watched|witnessed) (?P<actor>{name}) "
            rf"(?:move|moves|moving|put|puts|putting|place|places) {obj} "
            rf"(?:to|in|into|inside|on) {place}$"
        )
        self.knows_that = re.compile(
            rf"^(?P<agent>{name}) (?P<neg>(?:did not|didn't|does not|doesn't) )?"
            rf"(?:saw|sees|see|knows|know|noticed|notice|heard|hear) that (?P<rest>.+)$"
        )
        self.init = re.compile(rf"^{obj} (?:starts|started|begins|began|sits|sat) (?:out )?(?:in|inside|on) {place}$")
        self.reveal = re.compile(
            rf"^(?P<actor>{name}) (?:enters|entered|comes back|came back|returns|returned)"
            rf"(?: \w+)*? and (?:sees|saw|finds|found) {obj} (?:in|inside|on) {place}$"
        )
        self.tell = re.compile(
            rf"^(?P<actor>{name}) (?:privately |publicly |secretly )?{_TELL}(?: to)?"
            rf"(?: (?:everyone|all|{names}))?(?: that)? {obj} (?:is|was) (?:in|inside|on) {place}$"
        )
        self.perceived = re.compile(rf"^(?P<names>{names}) (?:also )?{_SEE} (?:it|this|that|the move|the claim)$")
        self.not_perceived = re.compile(
            rf"^(?P<names>{names}) (?:did not|didn't|does not|doesn't|could not|"
            rf"couldn't) (?:see|notice|hear|witness) (?:it|this|that|the move|the claim)$"
            rf"|^(?P<names2>{names}) missed (?:it|this|that)$"
        )
        self.not_present = re.compile(
            rf"^(?P<names>{names}) (?:was not|wasn't|were not|weren't|is not|isn't) "
            rf"(?:there|present|in the room|around)$|^(?P<names2>{names}) (?:had (?:already )?left|"
            rf"was away|was gone|was outside|had gone)(?: the room)?$"
        )
        self.secret = re.compile(
            rf"^(?P<names>{name}) (?:watched|saw it|saw) in secret$|"
            rf"^(?P<names2>{name}) secretly (?:watched|saw)(?: it)?$"
        )
        self.step = re.compile(
            rf"^step (?P<n>\d+)[,:]? (?P<who>reality|the start|{name}(?: thinks {name})*)[,:]? (?:no events|{_REFS})$"
        )
        self.deciding = re.compile(
            rf"^the last (?:event )?that counts,? (?:is )?(?P<kind>event|line) (?P<ref>\d+),? "
            rf"(?:(?:puts|shows) {obj}|says {obj} is) (?:in|inside|on) {place}$"
        )
        self.trust = re.compile(rf"^(?P<agent>{name}) (?:trusts|trusted) (?P<other>{name})$")
        self.distrust = re.compile(rf"^(?P<agent>{name}) (?:does not|doesn't|did not|didn't) trust (?P<other>{name})$")

    def place(self, text: str) -> str | None:
        """The story's container a PLACE names (None: none of them)."""
        text = re.sub(r"^(?:the|a|an) ", "", text.strip())
        if text in self.containers:
            return self.containers[text]
        for key in sorted(self.containers, key=len, reverse=True):  # "the red box now": a trailing word
            if text.startswith(key + " "):
                return self.containers[key]
        return None

    def agents_in(self, text: str) -> tuple[str, ...]:
        return tuple(self.agents[m.group(0)] for m in self.name.finditer(text))


def clauses(text: str) -> list[str]:
    return [part.strip(" ,:") for part in _SPLIT.split(text) if part and part.strip(" ,:")]


def _about_event(p: _Patterns, clause: str, base: dict) -> list[Claim]:
    for pattern, event in ((p.move, "move"), (p.init, "init"), (p.reveal, "reveal"), (p.tell, "tell")):
        m = pattern.match(clause)
        if m:
            actor = p.agents[m.group("actor")] if "actor" in pattern.groupindex else None
            return [Claim("event", container=p.place(m.group("place")), agent=actor, event=event, **base)]
    m = p.knows_that.match(clause)
    if m:  # "NAME saw that <event>" / "NAME doesn't know that <event>": the event, and NAME's perception of it
        said = _about_event(p, m.group("rest"), base)
        if len(said) == 1:
            kind = "not_perceived" if m.group("neg") else "perceived"
            return [*said, Claim(kind, agent=p.agents[m.group("agent")], **base)]
    m = p.saw_move.match(clause)
    if m:
        mover = p.agents[m.group("actor")]
        return [
            Claim("event", container=p.place(m.group("place")), agent=mover, event="move", **base),
            Claim("perceived", agent=p.agents[m.group("agent")], **base),
        ]
    return []


def _about_people(p: _Patterns, clause: str, base: dict) -> list[Claim]:
    for pattern, kind in (
        (p.not_perceived, "not_perceived"),
        (p.not_present, "not_present"),
        (p.secret, "secret"),
        (p.perceived, "perceived"),
    ):
        m = pattern.match(clause)
        if m:
            found = m.group("names") or m.groupdict().get("names2") or ""
            return [Claim(kind, agent=agent, **base) for agent in p.agents_in(found)]
    for pattern, kind in ((p.trust, "trust"), (p.distrust, "distrust")):
        m = pattern.match(clause)
        if m:
            return [Claim(kind, agent=p.agents[m.group("agent")], other=p.agents[m.group("other")], **base)]
    return []


def _about_belief(p: _Patterns, clause: str, base: dict) -> list[Claim]:
    m = p.belief.match(clause) or p.looks.match(clause)
    if not m:
        return []
    chain = p.agents_in(m.group("chain"))
    if m.groupdict().get("acc"):
        chain = (p.agents[m.group("acc")], *chain)
    return [Claim("belief", chain=chain, container=p.place(m.group("place")), **base)]


def _about_steps(p: _Patterns, clause: str, base: dict, step: dict) -> list[Claim]:
    """The `steps` form's clauses; `step` carries the chain (and time) of the last step head."""
    m = p.step.match(clause)
    if m:
        who, n = m.group("who"), int(m.group("n"))
        chain = p.agents_in(who)  # reality, the start: ()
        if len(chain) == 1:  # "step N, NAME": the chain of step N-1 (cut to N-1 agents), then NAME
            before = step.get("chain", ())
            chain = (*before[: n - 1], *chain) if len(before) >= n - 1 else ()
        step.clear()
        if not chain and who not in ("reality", "the start"):
            return []  # a step whose chain the text never built
        step.update(chain=chain, time="start" if who == "the start" else None)
        refs = tuple(int(n) for n in re.findall(r"\d+", m.group("refs") or ""))
        return [Claim("kept", **{**base, **step}, refs=refs, ref_kind=m.group("kind"))]
    if not step:
        return []
    m = p.deciding.match(clause)
    if m:
        container = p.place(m.group("place"))
        return [
            Claim(
                "deciding",
                **{**base, **step},
                container=container,
                refs=(int(m.group("ref")),),
                ref_kind=m.group("kind"),
            )
        ]
    if re.match(r"^none (?:of them )?counts$", clause):
        return [Claim("none_counts", **{**base, **step})]
    return []


def parse_claims(text: str, vocab: Vocabulary) -> list[Claim]:
    """Every claim of `text` in order (see the module docstring for the grammar)."""
    p = _Patterns(vocab)
    found: list[Claim] = []
    step: dict = {}  # the chain and time of the last "step N, ...:" head
    for raw in clauses(text):
        clause = norm(raw)
        line: int | None = None
        time: str | None = None
        label: int | None = None
        while True:
            stripped = _LEAD.sub("", clause)
            m = _TIME.match(stripped) or _LABEL.match(stripped)
            if m and m.re is _LABEL:
                label = int(m.group("label"))
                stripped = stripped[m.end() :]
            elif m:
                line = int(m.group("line")) if m.group("line") else line
                time = "start" if m.group("start") else "end" if m.group("end") else time
                stripped = stripped[m.end() :]
            if stripped == clause:
                break
            clause = stripped
        base = {"text": raw, "line": line, "time": time}
        said = _about_steps(p, clause, base, step)
        if not said:
            said = _about_event(p, clause, base)
            said = [replace(c, label=label) for c in said]  # the clause's label (the checker reads events')
        found.extend(said or _about_belief(p, clause, base) or _about_people(p, clause, base))
    return found


def vocabulary(agents: Iterable[str], obj: str, containers: Iterable[str]) -> Vocabulary:
    return Vocabulary(tuple(agents), obj, tuple(dict.fromkeys(containers)))
