"""The rendering step of `generators.generate`: one padded story and its questions told as unified records
(the story's text in the run's style and rendering, each question's options, answer and meta)."""
from __future__ import annotations

import random
from typing import Any, Iterator, Sequence

from tomforge.generators.beliefs import BeliefEngine
from tomforge.generators.entities import Pools, surface
from tomforge.generators.questions import Question
from tomforge.generators.renderings import SECOND_PERSON, THIRD_PERSON, render
from tomforge.generators.settings import GENERATOR, GENERATOR_VERSION, GenerationSettings
from tomforge.generators.templates import render_question, render_story, template_id
from tomforge.generators.world import SCENE, Story, trace_of
from tomforge.warehouse.record import build_record
from tomforge.warehouse.vocabulary import question_type_of_order


class RecordWriter:
    """Writes the records of one run's stories (its split, pools, phrasing variants and rendering)."""

    def __init__(self, settings: GenerationSettings, pools: Pools, variants: Sequence[int]) -> None:
        self.settings, self.pools, self.variants = settings, pools, variants
        self.rendering = settings.rendering
        self.held_out = settings.uses_held_out

    def records(self, story: Story, story_seed: int, questions: list[Question], engine: BeliefEngine,
                rng: random.Random) -> Iterator[dict[str, Any]]:
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
        for qi, q in enumerate(questions):
            yes_no = q.fmt == "yes_no"
            text = render(render_question(q.kind, yes_no, q.variant, q.chain, name(story.obj), name(q.asked) if q.asked else None),
                          self.rendering, reader)
            meta: dict[str, Any] = {
                "style": style, "entity_pool": self.pools.label, "object": name(story.obj), "candidates": candidates,
                "gold_role": q.role, "story_no": story_no, "n_moves": story.params["n_moves"],
                "base_agents": story.params["n_agents"], "rendering": self.rendering,
            }
            if self.rendering == SECOND_PERSON:
                meta["reader"] = reader
            options, answer, index = self._answer(q, story, name, meta, rng)
            order = 0 if q.key == "memory" else q.key  # memory: no mind nested (README, "belief_order")
            qtype = question_type_of_order(order, memory=q.key == "memory")
            yield build_record(
                source=self.settings.source, source_version=GENERATOR_VERSION,
                source_key=f"{split}/{seed}/{int(self.held_out)}/{story_no}/{qi}{told}",
                source_ref=f"generated/{split}/seed-{seed}#story-{story_no}/q-{qi}",
                split=split, context=context, question=text, question_type=qtype, answer=answer,
                answer_format=q.fmt, n_agents=len(story.agents), n_events=len(story.events), belief_order=order,
                perspective_chain=q.chain, is_false_belief=None if q.kind != "belief" else q.gold != final,
                options=options, answer_index=index, generator=GENERATOR, generator_version=GENERATOR_VERSION,
                template_id=template_id(style, q.kind, yes_no, q.variant) + told.replace("/", "."), seed=story_seed,
                operators=story.operators, trace=trace, meta=meta,
            )

    @staticmethod
    def _answer(q: Question, story: Story, name: Any, meta: dict[str, Any],
                rng: random.Random) -> tuple[list[str], str, int | None]:
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
                raise ValueError(f"story {story.params['story_no']}: a yes/no question without the container it asks about")
            meta["asked_container"] = name(q.asked)
            return ["yes", "no"], "yes" if q.yes else "no", 0 if q.yes else 1
        return [], name(q.gold), None
