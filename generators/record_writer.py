"""The rendering step of `generators.generate`: one padded story and its questions told as unified records
(the story's text in the run's style and rendering, each question's options, answer and meta)."""

from __future__ import annotations

import random
from functools import partial
from typing import Any, Callable, Iterator, Sequence

from tomforge.generators import dialogue as dialogue_turns
from tomforge.generators import dialogue_answers
from tomforge.generators import question_forms as forms
from tomforge.generators.beliefs import BeliefEngine
from tomforge.generators.entities import Pools, surface
from tomforge.generators.questions import Question
from tomforge.generators.renderings import DIALOGUE, SECOND_PERSON, THIRD_PERSON, render
from tomforge.generators.settings import GENERATOR, GENERATOR_VERSION, GenerationSettings, derive_seed
from tomforge.generators.templates import render_question, render_story, template_id
from tomforge.generators.world import SCENE, Story, trace_of
from tomforge.schemas.record import build_record
from tomforge.schemas.vocabulary import question_type_of_order


class RecordWriter:
    """Writes the records of one run's stories (its split, pools, phrasing variants and rendering)."""

    def __init__(self, settings: GenerationSettings, pools: Pools, variants: Sequence[int]) -> None:
        self.settings, self.pools, self.variants = settings, pools, variants
        self.rendering = settings.rendering
        self.held_out = settings.uses_held_out
        self.cut_balance = dialogue_turns.CutBalance()  # where dialogue questions are asked mid-conversation
        self.answer_balance = dialogue_answers.AnswerBalance()  # ... and which, so the answer does not show it

    def records(
        self, story: Story, story_seed: int, questions: list[Question], engine: BeliefEngine, rng: random.Random
    ) -> Iterator[dict[str, Any]]:
        style = story.params["style"]

        def name(x: str) -> str:
            return surface(x, style)

        context, _ = render_story(story, style, self.variants, rng)
        reader = story.agents[0]  # the second person's "you": no random draw, so every rendering tells the same worlds
        context = render(context, self.rendering, reader)
        told = "" if self.rendering == THIRD_PERSON else f"/{self.rendering}"  # item ids apart from third person's
        trace = trace_of(story, name)
        final = engine.reality()
        candidates = [name(c) for c in story.containers]
        story_no = story.params["story_no"]
        split, seed = self.settings.split, self.settings.seed
        spoken = None
        if self.rendering == DIALOGUE:  # the same world as chat turns (generators.dialogue), own random state
            spoken = dialogue_turns.tell(story, name, self.variants, random.Random(derive_seed("dialogue", story_seed)))
            context, cuts = spoken.context, self.dialogue_cuts(story, spoken, questions, name, story_seed)
        for qi, q in enumerate(questions):
            meta = self.question_meta(story, q, name(story.obj), candidates, reader)
            shared: dict[str, Any] = dict(
                source=self.settings.source,
                source_version=GENERATOR_VERSION,
                source_key=f"{split}/{seed}/{int(self.held_out)}/{story_no}/{qi}{told}",
                source_ref=f"generated/{split}/seed-{seed}#story-{story_no}/q-{qi}",
                split=split,
                context=context,
                n_agents=len(story.agents),
                n_events=len(story.events),
                generator=GENERATOR,
                generator_version=GENERATOR_VERSION,
                seed=story_seed,
                operators=story.operators,
                trace=trace,
                meta=meta,
            )
            fields, tid = self.question_fields(q, story, engine, name, final, rng, meta, reader)
            tid += told.replace("/", ".")
            if spoken is not None:  # the dialogue's turns and where each question is asked
                fields["question"], tid = self.asked_in_dialogue(spoken, cuts[qi], fields["question"], meta, tid)
                shared.update(context_kind="dialogue", turns=spoken.as_records())
            yield build_record(**shared, **fields, template_id=tid)

    def question_meta(self, story: Story, q: Question, obj: str, candidates: list[str], reader: str) -> dict[str, Any]:
        """What a record's `meta` says of its story, question and rendering (the reader in the second person)."""
        meta: dict[str, Any] = {
            "style": story.params["style"],
            "entity_pool": self.pools.label,
            "object": obj,
            "candidates": candidates,
            "gold_role": q.role,
            "story_no": story.params["story_no"],
            "n_moves": story.params["n_moves"],
            "base_agents": story.params["n_agents"],
            "rendering": self.rendering,
        }
        if self.rendering == SECOND_PERSON:
            meta["reader"] = reader
        return meta

    def question_fields(
        self,
        q: Question,
        story: Story,
        engine: BeliefEngine,
        name: Callable[[str], str],
        final: str,
        rng: random.Random,
        meta: dict[str, Any],
        reader: str,
    ) -> tuple[dict[str, Any], str]:
        """A question's own record fields and its template id (third person's): a list or answerability question's
        (`generators.question_forms`), else a container question's."""
        style = story.params["style"]
        if q.key in forms.KNOWLEDGE_FORMS:
            fields = forms.knowledge_fields(
                q.key,
                q.chain,
                q.variant,
                engine,
                name(story.obj),
                lambda t: render(t, self.rendering, reader),
                reader if self.rendering == SECOND_PERSON else None,
            )
            return fields, forms.knowledge_template(style, q.key, q.variant)
        fields = self.container_fields(q, story, name, final, rng, meta, reader)
        return fields, template_id(style, q.kind, q.fmt == "yes_no", q.variant)

    def dialogue_cuts(
        self, story: Story, spoken: dialogue_turns.Dialogue, questions: list[Question], name: Any, story_seed: int
    ) -> list[int | None]:
        """Per question, the turn it is asked right after (None: at the end), from its own random state
        (so the third person's records, options included, stay as they are)."""
        rng = random.Random(derive_seed("dialogue-cuts", story_seed))
        engines = dialogue_turns.prefix_engines(story)
        containers = [name(c) for c in story.containers]
        quiet = dialogue_turns.quiet_turns(spoken, containers)
        picks = dialogue_turns.surface_picks(spoken, containers)
        cuts = []
        style = story.params["style"]
        for q in questions:
            settled = dialogue_turns.settled_from(partial(forms.answer_in, q=q), engines)
            balance: Callable[[list[int]], int | None] | None = None
            if q.key not in forms.KNOWLEDGE_FORMS:  # a surface pick of "the container so far" stays at chance

                def hits(place: int, q: Question = q) -> dict[str, bool]:
                    return {
                        h: q.hit(story.containers[containers.index(c)]) if c is not None else False
                        for h, c in picks[place].items()
                    }

                def surface(places: list[int], q: Question = q, hits: Any = hits) -> int | None:
                    return self.cut_balance.choose(places, hits, (q.key, q.fmt), q.chance, rng)

                balance = surface

            labelled = dialogue_answers.label_of(q, len(containers), self.settings.controls)
            if labelled is not None:  # and the answer keeps its chance rate (generators.dialogue_answers)
                keys_at = partial(dialogue_answers.keys_at, q, style, spoken.phrasings)
                balance = self.answer_balance.choosing(keys_at, labelled, balance, rng)
            cuts.append(dialogue_turns.choose_cut(spoken, settled, quiet, rng, balance))
        return cuts

    @staticmethod
    def asked_in_dialogue(
        spoken: dialogue_turns.Dialogue, cut: int | None, question: str, meta: dict[str, Any], tid: str
    ) -> tuple[str, str]:
        """The question as asked in the conversation, its template id, and `meta.asked_after_turn` (turns
        said before it) and `meta.asked_after_event` (the trace index the checker cuts at)."""
        meta["turn_events"] = [None if e is None else e + 1 for e in spoken.events]
        if cut is None:
            meta["asked_after_turn"] = len(spoken.turns)
            return dialogue_turns.asked_after(spoken, None, question), tid
        meta["asked_after_turn"], meta["asked_after_event"] = cut + 1, (spoken.events[cut] or 0) + 1
        return dialogue_turns.asked_after(spoken, cut, question), tid + ".mid"

    def container_fields(
        self, q: Question, story: Story, name: Any, final: str, rng: random.Random, meta: dict[str, Any], reader: str
    ) -> dict[str, Any]:
        """The question fields of a "where is it" question (multiple choice, yes/no or free text)."""
        text = render(
            render_question(
                q.kind, q.fmt == "yes_no", q.variant, q.chain, name(story.obj), name(q.asked) if q.asked else None
            ),
            self.rendering,
            reader,
        )
        options, answer, index = self._answer(q, story, name, meta, rng)
        order = 0 if q.key == "memory" else q.key  # memory: no mind nested (README, "belief_order")
        qtype = question_type_of_order(order, memory=q.key == "memory")
        return dict(
            question=text,
            question_type=qtype,
            answer=answer,
            answer_format=q.fmt,
            belief_order=order,
            perspective_chain=q.chain,
            is_false_belief=None if q.kind != "belief" else q.gold != final,
            options=options,
            answer_index=index,
        )

    @staticmethod
    def _answer(
        q: Question, story: Story, name: Any, meta: dict[str, Any], rng: random.Random
    ) -> tuple[list[str], str, int | None]:
        """The question's options, answer and answer index (a yes/no question also names its container in `meta`)."""
        if q.fmt == "multiple_choice" and q.position is None:  # no controls: the scene's listing order
            listed = next(e.things for e in story.events if e.kind == SCENE)
            return [name(c) for c in listed], name(q.gold), listed.index(q.gold)
        if q.fmt == "multiple_choice" and q.position is not None:
            others = [c for c in story.containers if c != q.gold]
            rng.shuffle(others)
            others.insert(q.position, q.gold)
            return [name(c) for c in others], name(q.gold), q.position
        if q.fmt == "yes_no":
            if q.asked is None:
                raise ValueError(
                    f"story {story.params['story_no']}: a yes/no question without the container it asks about"
                )
            meta["asked_container"] = name(q.asked)
            return ["yes", "no"], "yes" if q.yes else "no", 0 if q.yes else 1
        return [], name(q.gold), None
